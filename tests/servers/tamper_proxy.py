#!/usr/bin/env python3
"""A loopback proxy in front of an OCI registry that serves every manifest with one byte
changed (a space added after the first '{') while keeping the registry's
Docker-Content-Digest: what a compromised mirror or a corrupting cache would do.

Usage: tamper_proxy.py LISTEN_PORT UPSTREAM_PORT"""
import http.server
import sys
import urllib.error
import urllib.request

UPSTREAM = f"http://127.0.0.1:{sys.argv[2]}"


class Proxy(http.server.BaseHTTPRequestHandler):
    def forward(self, send_body):
        request = urllib.request.Request(UPSTREAM + self.path, method=self.command,
                                         headers={k: v for k, v in self.headers.items()})
        try:
            response = urllib.request.urlopen(request)
            status, headers, body = response.status, response.headers, response.read()
        except urllib.error.HTTPError as e:
            status, headers, body = e.code, e.headers, e.read()
        if "/manifests/" in self.path and status == 200 and body.startswith(b"{"):
            body = b"{ " + body[1:]
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def do_GET(self):
        self.forward(True)

    def do_HEAD(self):
        self.forward(False)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Proxy).serve_forever()
