#!/usr/bin/env python3
"""A loopback Python package index (the simple repository API) serving tiny pure-Python
wheels it builds itself, for `trainlock lock`'s closure resolution and the images' `pip
install --require-hashes` where PyPI cannot be reached.

  GET /simple/                      the project list (PEP 503)
  GET /simple/{project}/            the project's files: PEP 691 JSON when the Accept header
                                    asks for application/vnd.pypi.simple.v1+json, else PEP 503
                                    HTML; each with its sha256, Requires-Python and PEP 658
                                    core-metadata hash
  GET /files/{wheel}                the wheel
  GET /files/{wheel}.metadata       its METADATA (PEP 658)

The wheels are byte-for-byte reproducible (fixed timestamps and modes, members in order,
stored uncompressed unless --deflate), so their hashes are stable from run to run and machine
to machine: examples/tiny/trainlock.lock pins the demo set's.

Usage: pypi_server.py PORT [--demo] [--spec FILE] [--format negotiate|html|json]
                           [--no-metadata] [--deflate] [--tamper FILE] [--hostile MODE]
  --demo         serve the demo set (examples/tiny's [python]): trainlock-demo-app 1.0.0,
                 which requires trainlock-demo-util>=1.1,<2 (and a Windows-only package the
                 index does not have), and trainlock-demo-util 1.0.0, 1.2.0 and 2.0.0
  --spec FILE    serve the wheels FILE describes: a JSON list of {"name", "version",
                 "requires": [...], "tag": "py3-none-any", "requires_python": "", "yanked": false}.
                 torch_standins.json stands in for torch and a few of its dependencies (names
                 and Requires-Dist made to look alike, none of their content) for the golden
                 Containerfiles of the GPU pilots
  --format       which page format to answer with (default: what the Accept header asks for)
  --no-metadata  offer no .metadata files: clients must read METADATA from the wheel
  --deflate      compress the wheels' members (deflate) instead of storing them
  --tamper FILE  serve different bytes for that wheel than the hash the pages name
  --hostile MODE misbehave as a hostile index would:
                 deep-json     every project page is PEP 691 JSON nested 100,000 levels deep
                 entities      every HTML page carries 200,000 character entities in a link
                 slow-wheel    wheels trickle out at one byte a second
                 huge-declared wheels declare a Content-Length of 64 GiB (and send a few bytes)
                 file-link     project pages link every wheel as file:///dev/zero
                 endless-error wheels answer 503 with an error page that never ends
"""
import argparse
import base64
import hashlib
import http.server
import io
import json
import re
import sys
import time
import urllib.parse
import zipfile

DEMO = [
    {"name": "trainlock-demo-app", "version": "1.0.0",
     "requires": ["trainlock-demo-util>=1.1,<2", 'trainlock-demo-windows; sys_platform == "win32"']},
    {"name": "trainlock-demo-util", "version": "1.0.0", "requires": []},
    {"name": "trainlock-demo-util", "version": "1.2.0", "requires": []},
    {"name": "trainlock-demo-util", "version": "2.0.0", "requires": []},
]


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def build_wheel(spec, deflate):
    """Returns (file name, wheel bytes, METADATA bytes) for one spec entry."""
    dist = re.sub(r"[-_.]+", "_", spec["name"])
    version = spec["version"]
    tag = spec.get("tag", "py3-none-any")
    info = f"{dist}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {spec['name']}\nVersion: {version}\n"
    if spec.get("requires_python"):
        metadata += f"Requires-Python: {spec['requires_python']}\n"
    for req in spec.get("requires", []):
        metadata += f"Requires-Dist: {req}\n"
    metadata += "\nA test package served by trainlock's loopback index.\n"
    members = [
        (f"{dist}/__init__.py", f'__version__ = "{version}"\n'),
        (f"{info}/METADATA", metadata),
        (f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: trainlock-tests\nRoot-Is-Purelib: true\nTag: {tag}\n"),
    ]
    record = ""
    for path, text in members:
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record += f"{path},sha256={digest},{len(text.encode())}\n"
    record += f"{info}/RECORD,,\n"
    members.append((f"{info}/RECORD", record))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for path, text in members:
            member = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            member.external_attr = 0o644 << 16
            member.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
            z.writestr(member, text)
    return f"{dist}-{version}-{tag}.whl", out.getvalue(), metadata.encode()


class Index(http.server.BaseHTTPRequestHandler):
    files = {}     # file name -> {"project", "wheel", "metadata", "spec", "served"}
    options = None

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", content_type="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        # Percent-decoded, as a real index serves it: pip asks for "torch-2.4.0%2Bcpu-...whl"
        # (it quotes every path it takes from a link), and "+" in a path is itself.
        path = urllib.parse.unquote(self.path.split("?")[0])
        if path in ("/simple", "/simple/"):
            names = sorted({f["project"] for f in self.files.values()})
            body = "".join(f'<a href="/simple/{n}/">{n}</a>\n' for n in names)
            return self.reply(200, f"<!DOCTYPE html><html><body>\n{body}</body></html>\n".encode(), "text/html")
        m = re.fullmatch(r"/simple/([^/]+)/?", path)
        if m:
            return self.project(m.group(1))
        m = re.fullmatch(r"/files/([^/]+)", path)
        if m:
            name = m.group(1)
            if name.endswith(".metadata") and name[:-9] in self.files and not self.options.no_metadata:
                return self.reply(200, self.files[name[:-9]]["metadata"])
            if name in self.files:
                if self.options.hostile == "endless-error":
                    return self.endless_error()
                if self.options.hostile == "slow-wheel":
                    return self.trickle(self.files[name]["served"])
                if self.options.hostile == "huge-declared":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Length", str(64 << 30))
                    self.end_headers()
                    self.wfile.write(self.files[name]["served"][:16])
                    return
                return self.reply(200, self.files[name]["served"], "application/octet-stream")
        self.reply(404, b"not found\n")

    def endless_error(self):
        """503, then an error page as fast as the client takes it, until it hangs up."""
        self.send_response(503)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        chunk = b"<p>service unavailable</p>\n" * 4096
        try:
            while True:
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def trickle(self, body):
        """One byte a second, until the client gives up."""
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            for i in range(len(body)):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                time.sleep(1)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def project(self, name):
        if self.options.hostile == "deep-json":
            return self.reply(200, b"[" * 100000 + b"]" * 100000, "application/vnd.pypi.simple.v1+json")
        entries = [(file, f) for file, f in sorted(self.files.items()) if f["project"] == normalize(name)]
        if not entries:
            return self.reply(404, b"not found\n")
        fmt = self.options.format
        if fmt == "negotiate":
            fmt = "json" if "application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", "") else "html"
        if fmt == "json":
            files = []
            for file, f in entries:
                entry = {"filename": file, "url": f"/files/{file}",
                         "hashes": {"sha256": hashlib.sha256(f["wheel"]).hexdigest()},
                         "yanked": bool(f["spec"].get("yanked"))}
                if f["spec"].get("requires_python"):
                    entry["requires-python"] = f["spec"]["requires_python"]
                if not self.options.no_metadata:
                    entry["core-metadata"] = {"sha256": hashlib.sha256(f["metadata"]).hexdigest()}
                files.append(entry)
            body = json.dumps({"meta": {"api-version": "1.1"}, "name": normalize(name), "files": files})
            return self.reply(200, body.encode(), "application/vnd.pypi.simple.v1+json")
        links = ""
        for file, f in entries:
            attrs = ""
            if f["spec"].get("requires_python"):
                attrs += ' data-requires-python="%s"' % f["spec"]["requires_python"].replace("<", "&lt;").replace(">", "&gt;")
            if not self.options.no_metadata:
                attrs += ' data-core-metadata="sha256=%s"' % hashlib.sha256(f["metadata"]).hexdigest()
            if f["spec"].get("yanked"):
                attrs += ' data-yanked=""'
            href = "file:///dev/zero" if self.options.hostile == "file-link" else f"../../files/{file}"
            links += f'<a href="{href}#sha256={hashlib.sha256(f["wheel"]).hexdigest()}"{attrs}>{file}</a><br/>\n'
        if self.options.hostile == "entities":
            links += '<a href="../../files/none.whl">' + "&amp;" * 200000 + "</a>\n"
        body = f"<!DOCTYPE html><html><body>\n{links}</body></html>\n"
        self.reply(200, body.encode(), "text/html")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--demo", action="store_true")
    parser.add_argument("--spec")
    parser.add_argument("--format", default="negotiate", choices=["negotiate", "html", "json"])
    parser.add_argument("--no-metadata", action="store_true")
    parser.add_argument("--deflate", action="store_true")
    parser.add_argument("--tamper", action="append", default=[])
    parser.add_argument("--hostile", choices=["deep-json", "entities", "slow-wheel", "huge-declared", "file-link",
                                                 "endless-error"])
    options = parser.parse_args()
    specs = list(DEMO) if options.demo else []
    if options.spec:
        with open(options.spec) as f:
            specs += json.load(f)
    for spec in specs:
        file, wheel, metadata = build_wheel(spec, options.deflate)
        served = wheel
        if file in options.tamper:
            served = wheel.replace(b"__version__", b"__tampered_")
        Index.files[file] = {"project": normalize(spec["name"]), "wheel": wheel, "metadata": metadata,
                             "spec": spec, "served": served}
    Index.options = options
    server = http.server.ThreadingHTTPServer(("127.0.0.1", options.port), Index)
    print(f"serving {len(Index.files)} wheels on http://127.0.0.1:{options.port}/simple", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
