"""JSON from files an engine did not write itself (its spec, a checkpoint's commit marker, a
framework's trainer state, a safetensors header, a rank's error report), read under the limits
the native reader keeps (src/base/json_limits.h): arrays and objects nested at most 64 deep,
every number within a double's range, each member named once per object, and no NaN or
Infinity. Python's json recurses once per level (a 100,000-deep document raises RecursionError,
which no reader here expects), reads 1e999 as inf and keeps the last of two equal members
silently; a crafted checkpoint must be refused as unreadable, with where, not crash the engine
or mean something else than it says.

loads() raises ValueError naming the byte offset of the first breach, which each caller turns
into its own error with the file's name. The token scan that finds where a limit breaks is a
Python loop over the text (7 s for a 10 MB array of numbers), so it runs only where a cheap
look at the text (regular expressions: the bracket depth, numbers that may be too large) or
Python's parser (a member named twice) says that a limit may break.
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


class _Breach(ValueError):
    """A member named twice, seen by the parser's hook; the scan then says where."""


def _not_json(name):
    raise ValueError("%s is not a JSON value" % name)


def _members(pairs):
    value = dict(pairs)
    if len(value) != len(pairs):
        raise _Breach("a member appears twice in one object")
    return value


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r'[^\[\]{}]+')
_INNERMOST = re.compile(r'\[\]|\{\}')
# A number a double cannot hold (1.8e308 and up) has an exponent of three digits or more, or
# else, with an exponent of at most 99, an integer part of 210 digits or more (JSON allows no
# leading zeros); the scan reads whatever looks like either and decides.
_LARGE_NUMBER = re.compile(r'[eE][-+]?\d{3}|\d{200}')


def _may_breach(text):
    """Whether the scan must read `text`: brackets nested deeper than the limit (outside
    strings, peeled one level per pass at the regex engine's speed) or a number that may not fit."""
    if _LARGE_NUMBER.search(text):
        return True
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    for _ in range(MAX_DEPTH):
        if not brackets:
            return False
        brackets = _INNERMOST.sub("", brackets)
    return bool(brackets)


def _refused(text, breach):
    return ValueError("at byte %d: %s" % (len(text[:breach[0]].encode("utf-8")), breach[1]))


def loads(raw, nonfinite=False):
    """The value of `raw` (bytes as UTF-8, or str); ValueError where it is not JSON or breaks a
    limit (UnicodeDecodeError, a ValueError, for bytes that are not UTF-8). nonfinite=True reads
    NaN, Infinity and -Infinity as Python's json writes them (transformers' trainer state logs a
    gradient norm of inf at an fp16 step that overflowed)."""
    text = bytes(raw).decode("utf-8") if isinstance(raw, (bytes, bytearray, memoryview)) else raw
    if _may_breach(text):
        breach = _breach(text)
        if breach is not None:
            raise _refused(text, breach)
    try:
        return json.loads(text, object_pairs_hook=_members, parse_constant=None if nonfinite else _not_json)
    except _Breach as e:
        breach = _breach(text)
        raise _refused(text, breach) if breach is not None else ValueError(str(e))
    except RecursionError:  # the scan found no breach yet Python's parser recursed too deep
        raise ValueError("JSON nested too deep to read")


def load_file(path, max_bytes, nonfinite=False):
    """The value of the JSON file at `path`, read no further than `max_bytes` (+1 to tell a
    larger file, which is refused unread); OSError where it cannot be read, ValueError where it
    is larger or not JSON within the limits (loads)."""
    with open(path, "rb") as f:
        raw = f.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise ValueError("larger than %d bytes" % max_bytes)
    return loads(raw, nonfinite=nonfinite)
