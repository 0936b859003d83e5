#!/usr/bin/env python3
"""A loopback stand-in for the Hugging Face Hub implementing exactly the endpoints trainlock
uses (src/hf_hub.h), over the repositories under ROOT (ROOT/<org>/<name>/<files>):

  GET /api/models/{org}/{name}/revision/{rev}?blobs=true   (and /api/datasets/...)
      rev "main" or the fixed COMMIT -> {"sha": COMMIT, "siblings": [...]}; *.safetensors and
      *.bin files carry "lfs": {"sha256", "size"}, others only "size"
  GET /{org}/{name}/resolve/{COMMIT}/{path}                (and /datasets/{org}/{name}/...)
      the file's bytes

Failure modes: a repository named "gated" answers 401 without "Authorization: Bearer
good-token"; an unknown repository, revision or file answers 404; a file named
"truncated.json" announces its full length but the connection closes halfway; a repository
holding "answer.json" answers its revision request with that file's bytes verbatim (the
hostile answers of a compromised endpoint).

Usage: hf_server.py PORT ROOT"""
import hashlib
import http.server
import json
import os
import sys
import urllib.parse

ROOT = sys.argv[2]
COMMIT = "0123456789abcdef0123456789abcdef01234567"


class Hub(http.server.BaseHTTPRequestHandler):
    def reply(self, status, body=b"", content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def repo_dir(self, org, name):
        path = os.path.join(ROOT, org, name)
        return path if os.path.isdir(path) else None

    def authorized(self, name):
        return name != "gated" or self.headers.get("Authorization") == "Bearer good-token"

    def do_GET(self):
        parts = urllib.parse.urlparse(self.path).path.strip("/").split("/")
        if parts[0] == "api" and len(parts) == 6 and parts[1] in ("models", "datasets") and parts[4] == "revision":
            return self.revision(parts[2], parts[3], parts[5])
        if parts[0] == "datasets":
            parts = parts[1:]
        if len(parts) >= 5 and parts[2] == "resolve":
            return self.file(parts[0], parts[1], parts[3], "/".join(parts[4:]))
        self.reply(404, b'{"error": "not found"}')

    def revision(self, org, name, rev):
        if not self.authorized(name):
            return self.reply(401, b'{"error": "gated"}')
        directory = self.repo_dir(org, name)
        if directory is None or rev not in ("main", COMMIT):
            return self.reply(404, b'{"error": "Revision Not Found"}')
        if os.path.isfile(os.path.join(directory, "answer.json")):
            return self.reply(200, open(os.path.join(directory, "answer.json"), "rb").read())
        siblings = []
        for file in sorted(os.listdir(directory)):
            data = open(os.path.join(directory, file), "rb").read()
            entry = {"rfilename": file, "size": len(data)}
            if file.endswith((".safetensors", ".bin")):
                entry["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
            siblings.append(entry)
        self.reply(200, json.dumps({"sha": COMMIT, "siblings": siblings}).encode())

    def file(self, org, name, commit, path):
        if not self.authorized(name):
            return self.reply(401, b'{"error": "gated"}')
        directory = self.repo_dir(org, name)
        full = os.path.join(directory or "", path)
        if directory is None or commit != COMMIT or not os.path.isfile(full):
            return self.reply(404, b'{"error": "Entry Not Found"}')
        data = open(full, "rb").read()
        if path == "truncated.json":
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.reply(200, data, "application/octet-stream")

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Hub).serve_forever()
