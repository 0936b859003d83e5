#!/usr/bin/env python3
"""A loopback stand-in for the Kubernetes API server, for the real kubectl: the calls
`trainlock watch --revoke k8s` (src/watch/revoke_action.cc) and `fleet k8s --label-nodes`'s
label script make on Nodes, answered as the API server answers them, over plain HTTP.

  GET /api, /apis, /api/v1      discovery: the core group's v1 with one resource, nodes
                                (kubectl falls back from aggregated discovery to these)
  GET /version                  a version answer
  GET /api/v1/nodes             the NodeList
  GET /api/v1/nodes/NAME        the Node, or a 404 Status
  PATCH /api/v1/nodes/NAME      applied to the stored Node by its Content-Type:
      application/merge-patch+json            RFC 7386 (what `kubectl label` sends)
      application/strategic-merge-patch+json  Kubernetes' strategic merge (`kubectl taint`):
                                              maps merge, null deletes, lists replace except
                                              the Node's lists with a merge key or strategy
                                              (metadata.ownerReferences, metadata.finalizers,
                                              spec.podCIDRs, status.conditions,
                                              status.addresses); the $patch, $retainKeys,
                                              $setElementOrder/ and $deleteFromPrimitiveList/
                                              directives; an unknown directive is refused
      application/json-patch+json             RFC 6902 (add, remove, replace, move, copy, test)
    then checked as the API server's validation checks a Node before storing it: label and
    annotation keys are qualified names, label values at most 63 characters of
    [A-Za-z0-9._-] starting and ending alphanumeric, taints have a qualified-name key, a
    label-value value, an effect of NoSchedule, PreferNoSchedule or NoExecute and no two the
    same key and effect; name, kind and apiVersion unchanged; a stated resourceVersion must be
    the stored one (409). A refused patch is a 422 Status, as the API server answers, and the
    Node is left as it was. fieldValidation=Strict (which `kubectl taint` asks for) is not
    enforced here: the tests check every Node a patch produced against the Kubernetes OpenAPI
    schemas instead (tests/k8s/validate.mjs), unknown fields included.

Anything else answers 404 (a watch, a label or field selector: 400), a body over 1 MiB 413, a
request with no Content-Length 411. Every request is appended to LOG as one JSON line:
{"method", "path", "query", "content_type", "body", "status", "node"} with "node" the stored
Node after a PATCH that applied. After every change the NodeList is written to STATE (a new
file renamed over the old one). Each connection times out after 10 s of silence; the server
exits when its parent (the test) is gone, and after --lifetime seconds in any case.

Usage: kube_api_server.py --nodes FILE --log FILE --state FILE --port-file FILE
                          [--lifetime SECONDS]
  --nodes FILE      the cluster's Nodes at the start: a JSON list of Node objects (or a
                    NodeList); uid, resourceVersion and creationTimestamp are filled in
  --port-file FILE  where the port it listens on (127.0.0.1, chosen by the kernel) is written
                    once it accepts connections
"""
import argparse
import copy
import http.server
import json
import os
import re
import sys
import threading
import time
import urllib.parse
import uuid

MAX_BODY = 1 << 20

# The Node's lists that a strategic merge patch merges instead of replacing (the patchMergeKey
# and patchStrategy tags of k8s.io/api/core/v1 and meta/v1): a field name for lists of objects
# merged by that key, PRIMITIVE for lists of values merged as a set.
PRIMITIVE = object()
MERGE_LISTS = {
    ("metadata", "ownerReferences"): "uid",
    ("metadata", "finalizers"): PRIMITIVE,
    ("spec", "podCIDRs"): PRIMITIVE,
    ("status", "conditions"): "type",
    ("status", "addresses"): "type",
}

QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class Refused(Exception):
    """A request the API server would refuse: HTTP status, reason and message."""

    def __init__(self, code, reason, message):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


def invalid(name, problems):
    return Refused(422, "Invalid", f'Node "{name}" is invalid: ' + "; ".join(problems))


# --- the three patch types -------------------------------------------------------------------

def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


DELETE = object()


def strategic_map(target, patch, path):
    """A map of a strategic merge patch applied to `target` at `path` (a tuple of keys)."""
    directive = patch.get("$patch")
    if directive == "replace":
        return strip_directives({k: v for k, v in patch.items() if k != "$patch"}, path)
    if directive == "delete":
        return DELETE
    if directive is not None:
        raise Refused(400, "BadRequest", f"unknown $patch directive {directive!r} at {'.'.join(path)}")
    result = dict(target) if isinstance(target, dict) else {}
    orders = {}
    for key, value in patch.items():
        if key == "$retainKeys":
            continue
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [x for x in result.get(field) or [] if x not in (value or [])]
            continue
        if key.startswith("$"):
            raise Refused(400, "BadRequest", f"unknown patch directive {key!r} at {'.'.join(path)}")
        child = path + (key,)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = strategic_map(result.get(key), value, child)
            if merged is DELETE:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = strategic_list(result.get(key), value, child)
        else:
            result[key] = value
    for field, order in orders.items():
        result[field] = ordered(result.get(field) or [], order, MERGE_LISTS.get(path + (field,)))
    if "$retainKeys" in patch:
        keep = set(patch["$retainKeys"] or [])
        result = {k: v for k, v in result.items() if k in keep}
    return result


def strip_directives(value, path):
    if isinstance(value, dict):
        for key in value:
            if key.startswith("$"):
                raise Refused(400, "BadRequest", f"patch directive {key!r} inside a replaced value at {'.'.join(path)}")
        return {k: strip_directives(v, path + (k,)) for k, v in value.items()}
    if isinstance(value, list):
        return [strip_directives(v, path) for v in value]
    return value


def strategic_list(target, patch, path):
    strategy = MERGE_LISTS.get(path)
    target = list(target) if isinstance(target, list) else []
    if strategy is None:
        return strip_directives(patch, path)
    if strategy is PRIMITIVE:
        return target + [x for x in patch if x not in target]
    for element in patch:
        if not isinstance(element, dict) or strategy not in element:
            raise Refused(400, "BadRequest", f"{'.'.join(path)}: an element without its merge key {strategy}")
        at = next((i for i, t in enumerate(target) if t.get(strategy) == element[strategy]), None)
        if element.get("$patch") == "delete":
            if at is not None:
                del target[at]
            continue
        if at is None:
            target.append(strip_directives({k: v for k, v in element.items() if k != "$patch"}, path))
        else:
            merged = strategic_map(target[at], element, path)
            target[at] = merged
    return target


def ordered(items, order, strategy):
    def key(item):
        name = item.get(strategy) if isinstance(item, dict) and isinstance(strategy, str) else item
        for i, o in enumerate(order):
            wanted = o.get(strategy) if isinstance(o, dict) and isinstance(strategy, str) else o
            if wanted == name:
                return i
        return len(order)
    return sorted(items, key=key)


def pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise Refused(422, "Invalid", f"JSON pointer {path!r} does not start with /")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(document, operations):
    """RFC 6902."""
    if not isinstance(operations, list):
        raise Refused(400, "BadRequest", "a JSON patch is a list of operations")
    document = copy.deepcopy(document)

    def parent_of(tokens):
        node = document
        for token in tokens[:-1]:
            if isinstance(node, list):
                node = node[int(token)]
            elif isinstance(node, dict) and token in node:
                node = node[token]
            else:
                raise Refused(422, "Invalid", f"JSON patch: no {token!r} on the path")
        return node

    def get(tokens):
        if not tokens:
            return document
        node = parent_of(tokens)
        last = tokens[-1]
        try:
            return node[int(last)] if isinstance(node, list) else node[last]
        except (KeyError, IndexError, ValueError) as e:
            raise Refused(422, "Invalid", f"JSON patch: nothing at {last!r}") from e

    def remove(tokens):
        node = parent_of(tokens)
        last = tokens[-1]
        try:
            return node.pop(int(last)) if isinstance(node, list) else node.pop(last)
        except (KeyError, IndexError, ValueError) as e:
            raise Refused(422, "Invalid", f"JSON patch: nothing to remove at {last!r}") from e

    def add(tokens, value):
        nonlocal document
        if not tokens:
            document = value
            return
        node = parent_of(tokens)
        last = tokens[-1]
        if isinstance(node, list):
            index = len(node) if last == "-" else int(last)
            if index > len(node):
                raise Refused(422, "Invalid", f"JSON patch: index {index} past the end")
            node.insert(index, value)
        elif isinstance(node, dict):
            node[last] = value
        else:
            raise Refused(422, "Invalid", "JSON patch: add into a value that is no container")

    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise Refused(400, "BadRequest", "a JSON patch operation needs op and path")
        tokens = pointer(op["path"])
        kind = op["op"]
        if kind == "add":
            add(tokens, copy.deepcopy(op["value"]))
        elif kind == "remove":
            remove(tokens)
        elif kind == "replace":
            remove(tokens)
            add(tokens, copy.deepcopy(op["value"]))
        elif kind == "move":
            value = remove(pointer(op["from"]))
            add(tokens, value)
        elif kind == "copy":
            add(tokens, copy.deepcopy(get(pointer(op["from"]))))
        elif kind == "test":
            if get(tokens) != op["value"]:
                raise Refused(422, "Invalid", f"JSON patch: test failed at {op['path']}")
        else:
            raise Refused(400, "BadRequest", f"unknown JSON patch operation {kind!r}")
    return document


# --- the API server's checks of a Node -------------------------------------------------------

def qualified_name_problem(key):
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix)):
        return f"prefix part {prefix!r} must be a DNS-1123 subdomain"
    if not name or len(name) > 63 or not QUALIFIED_NAME.match(name):
        return f"name part {name!r} must be 1 to 63 characters of [A-Za-z0-9._-], starting and ending alphanumeric"
    return None


def label_value_problem(value):
    if not isinstance(value, str):
        return "must be a string"
    if value and (len(value) > 63 or not QUALIFIED_NAME.match(value)):
        return "must be at most 63 characters of [A-Za-z0-9._-], starting and ending alphanumeric"
    return None


def node_problems(before, after):
    problems = []
    if not isinstance(after, dict) or not isinstance(after.get("metadata"), dict):
        return ["the Node has no metadata"]
    for field in ("apiVersion", "kind"):
        if after.get(field) != before.get(field):
            problems.append(f"{field}: may not change")
    if after["metadata"].get("name") != before["metadata"].get("name"):
        problems.append("metadata.name: may not change")
    for field in ("labels", "annotations"):
        values = after["metadata"].get(field) or {}
        if not isinstance(values, dict):
            problems.append(f"metadata.{field}: must be a map")
            continue
        for key, value in values.items():
            if (p := qualified_name_problem(key)):
                problems.append(f"metadata.{field}: Invalid value: {key!r}: {p}")
            if field == "labels" and (p := label_value_problem(value)):
                problems.append(f"metadata.labels: Invalid value: {value!r}: {p}")
            if field == "annotations" and not isinstance(value, str):
                problems.append(f"metadata.annotations.{key}: must be a string")
    taints = (after.get("spec") or {}).get("taints") or []
    seen = set()
    for i, taint in enumerate(taints if isinstance(taints, list) else [None]):
        where = f"spec.taints[{i}]"
        if not isinstance(taint, dict):
            problems.append(f"{where}: must be an object")
            continue
        if (p := qualified_name_problem(taint.get("key") or "")):
            problems.append(f"{where}.key: Invalid value: {taint.get('key')!r}: {p}")
        if (p := label_value_problem(taint.get("value", ""))):
            problems.append(f"{where}.value: Invalid value: {taint.get('value')!r}: {p}")
        if taint.get("effect") not in TAINT_EFFECTS:
            problems.append(f"{where}.effect: Unsupported value: {taint.get('effect')!r}")
        if (taint.get("key"), taint.get("effect")) in seen:
            problems.append(f"{where}: Duplicate value: taints must be unique by key and effect")
        seen.add((taint.get("key"), taint.get("effect")))
    return problems


# --- the server ------------------------------------------------------------------------------

class Cluster:
    def __init__(self, nodes, state_path, log_path):
        self.lock = threading.Lock()
        self.version = 100
        self.nodes = {}
        for node in nodes:
            meta = node.setdefault("metadata", {})
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", "2026-12-01T00:00:00Z")
            meta["resourceVersion"] = self.next_version()
            self.nodes[meta["name"]] = node
        self.state_path, self.log_path = state_path, log_path
        self.save()

    def next_version(self):
        self.version += 1
        return str(self.version)

    def node_list(self):
        return {"kind": "NodeList", "apiVersion": "v1",
                "metadata": {"resourceVersion": str(self.version)},
                "items": [self.nodes[n] for n in sorted(self.nodes)]}

    def save(self):
        temporary = self.state_path + ".new"
        with open(temporary, "w") as f:
            json.dump(self.node_list(), f, indent=1, sort_keys=True)
        os.replace(temporary, self.state_path)

    def log(self, entry):
        with open(self.log_path, "a") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")

    def patch(self, name, content_type, body):
        try:
            patch = json.loads(body)
        except ValueError as e:
            raise Refused(400, "BadRequest", f"the patch is no JSON: {e}") from e
        before = self.nodes.get(name)
        if before is None:
            raise Refused(404, "NotFound", f'nodes "{name}" not found')
        if content_type == "application/merge-patch+json":
            after = merge_patch(before, patch)
        elif content_type == "application/strategic-merge-patch+json":
            if not isinstance(patch, dict):
                raise Refused(400, "BadRequest", "a strategic merge patch is an object")
            after = strategic_map(before, patch, ())
        elif content_type == "application/json-patch+json":
            after = json_patch(before, patch)
        else:
            raise Refused(415, "UnsupportedMediaType", f"the stand-in does not take {content_type!r} patches")
        stated = (patch.get("metadata") or {}).get("resourceVersion") if isinstance(patch, dict) else None
        if stated is not None and stated != before["metadata"]["resourceVersion"]:
            raise Refused(409, "Conflict", f'Operation cannot be fulfilled on nodes "{name}": the object has been modified')
        if (problems := node_problems(before, after)):
            raise invalid(name, problems)
        after["metadata"]["resourceVersion"] = self.next_version()
        self.nodes[name] = after
        self.save()
        return after


def discovery(path, port):
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                "serverAddress": f"127.0.0.1:{port}"}]}
    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
    if path == "/api/v1":
        return {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
            {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node",
             "verbs": ["get", "list", "patch"], "shortNames": ["no"]}]}
    if path == "/version":
        return {"major": "1", "minor": "32", "gitVersion": "v1.32.0-trainlock-stand-in",
                "platform": "linux/amd64"}
    return None


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class Api(http.server.BaseHTTPRequestHandler):
    timeout = 10  # a silent connection is dropped rather than holding a thread

    def reply(self, code, document):
        body = json.dumps(document).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_request(self, method):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        entry = {"method": method, "path": url.path, "query": url.query,
                 "content_type": content_type, "body": ""}
        cluster = self.server.cluster
        try:
            body = self.read_body(method)
            entry["body"] = body.decode("utf-8", "replace")
            with cluster.lock:
                code, document = self.answer(method, url.path, query, content_type, body, entry)
        except Refused as e:
            code, document = e.code, status(e.code, e.reason, e.message)
        entry["status"] = code
        with cluster.lock:
            cluster.log(entry)
        self.reply(code, document)

    def read_body(self, method):
        if method != "PATCH":
            return b""
        length = self.headers.get("Content-Length")
        if length is None:
            self.close_connection = True
            raise Refused(411, "BadRequest", "a PATCH needs a Content-Length")
        if not length.isdigit() or int(length) > MAX_BODY:
            self.close_connection = True
            raise Refused(413, "RequestEntityTooLarge", f"a body over {MAX_BODY} bytes")
        return self.rfile.read(int(length))

    def answer(self, method, path, query, content_type, body, entry):
        cluster = self.server.cluster
        if method == "GET" and (document := discovery(path, self.server.server_port)) is not None:
            return 200, document
        parts = path.strip("/").split("/")
        if parts[:3] != ["api", "v1", "nodes"] or len(parts) > 4:
            raise Refused(404, "NotFound", f"the stand-in serves no {path}")
        for unsupported in ("watch", "labelSelector", "fieldSelector"):
            if unsupported in query:
                raise Refused(400, "BadRequest", f"the stand-in does not support {unsupported}")
        if len(parts) == 3 and method == "GET":
            return 200, cluster.node_list()
        if len(parts) == 4 and method == "GET":
            if parts[3] not in cluster.nodes:
                raise Refused(404, "NotFound", f'nodes "{parts[3]}" not found')
            return 200, cluster.nodes[parts[3]]
        if len(parts) == 4 and method == "PATCH":
            node = cluster.patch(parts[3], content_type, body)
            entry["node"] = node
            return 200, node
        raise Refused(405, "MethodNotAllowed", f"the stand-in does not {method} {path}")

    def do_GET(self):
        self.handle_request("GET")

    def do_PATCH(self):
        self.handle_request("PATCH")

    def do_PUT(self):
        self.handle_request("PUT")

    def do_POST(self):
        self.handle_request("POST")

    def do_DELETE(self):
        self.handle_request("DELETE")

    def log_message(self, *args):
        pass


def watchdog(parent, deadline):
    """Ends the server when the test that started it is gone, or at the deadline."""
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.2)
    os._exit(0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--state", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--lifetime", type=float, default=600)
    args = parser.parse_args()
    with open(args.nodes) as f:
        nodes = json.load(f)
    if isinstance(nodes, dict):
        nodes = nodes.get("items", [])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Api)
    server.daemon_threads = True
    server.cluster = Cluster(nodes, args.state, args.log)
    threading.Thread(target=watchdog, args=(os.getppid(), time.monotonic() + args.lifetime),
                     daemon=True).start()
    temporary = args.port_file + ".new"
    with open(temporary, "w") as f:
        f.write(f"{server.server_port}\n")
    os.replace(temporary, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
