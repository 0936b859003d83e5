"""JSON from files an engine did not write itself (its spec, a checkpoint's commit marker, a
framework's trainer state, a safetensors header, a rank's error report), read under the limits
the native reader keeps (src/base/json_limits.h): arrays and objects nested at most 64 deep,
every number within a double's range, each member named once per object, and no NaN or
Infinity. Python's json recurses once per level (a 100,000-deep document raises RecursionError,
which no reader here expects), reads 1e999 as inf and keeps the last of two equal members
silently; a crafted checkpoint must be refused as unreadable, with where, not crash the engine
or mean something else than it says.

loads() raises ValueError naming the byte offset of the first breach, which each caller turns
into its own error with the file's name.
"""

import json
import math
import re

MAX_DEPTH = 64  # kMaxJsonDepth in src/base/json_limits.h (tests/engines/test_bounded_json.py reads it)

# What the scan needs outside strings: strings themselves (an unterminated one runs to the
# end), brackets, commas, and numbers.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*("?)|[\[\]{},]|[-0-9][-+.0-9eE]*')


def _number(token):
    try:
        return math.isinf(float(token))
    except ValueError:  # not a number at all: left for the parser to refuse
        return False


def _breach(text):
    """(offset, what) of the first place `text` breaks a limit, or None: the native reader's
    scan (FindJsonLimitBreach), token by token."""
    frames = []  # [is_object, expecting_a_member_name, names seen]
    for match in _TOKEN.finditer(text):
        token, at = match.group(), match.start()
        first = token[0]
        if first == '"':
            if not match.group(1):
                return None  # unterminated: the parser refuses it
            if frames and frames[-1][0] and frames[-1][1]:
                frames[-1][1] = False
                name = _name(token)
                if name in frames[-1][2]:
                    return at, "member %s appears twice in one object" % json.dumps(name)[:80]
                frames[-1][2].add(name)
        elif first in "{[":
            if len(frames) == MAX_DEPTH:
                return at, "JSON nested deeper than %d levels of arrays and objects" % MAX_DEPTH
            frames.append([first == "{", first == "{", set()])
        elif first in "}]":
            if frames:
                frames.pop()
        elif first == ",":
            if frames and frames[-1][0]:
                frames[-1][1] = True
        elif _number(token):
            return at, "number %s is beyond the range of a double" % token[:40]
    return None


def _name(token):
    try:
        return json.loads(token)
    except ValueError:
        return token[1:-1]


def _not_json(name):
    raise ValueError("%s is not a JSON value" % name)


def loads(raw):
    """The value of `raw` (bytes as UTF-8, or str); ValueError where it is not JSON or breaks a
    limit (UnicodeDecodeError, a ValueError, for bytes that are not UTF-8)."""
    text = bytes(raw).decode("utf-8") if isinstance(raw, (bytes, bytearray, memoryview)) else raw
    breach = _breach(text)
    if breach is not None:
        raise ValueError("at byte %d: %s" % (len(text[:breach[0]].encode("utf-8")), breach[1]))
    try:
        return json.loads(text, parse_constant=_not_json)
    except RecursionError:  # cannot happen after the scan; kept so that no reader ever sees one
        raise ValueError("JSON nested too deep to read")
