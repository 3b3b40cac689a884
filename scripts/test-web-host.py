#!/usr/bin/env python3
"""The test network's web hosts (scripts/test-host.sh starts this in the test "internet" host's
network namespace; it dies with test-host.sh's inner shell). Python 3 standard library and the
openssl command only.

    test-web-host.py DIR

DIR (a directory on the test network's private tmpfs) receives, made at start with openssl:
  ca.pem         the test CA (0644; the tests trust it through SSL_CERT_FILE), ca.key (0600)
  server.pem     signed by the CA for the names and addresses in SERVER_NAMES (key 0600)
  untrusted.pem  self-signed, for untrusted.test / 93.184.216.36, signed by nobody trusted
  files/         world-writable (sticky): whatever a test writes there is served at /files/NAME
  requests.log   every request's Host header and target, one line each, as it arrives (0644):
                 tests that must show a request never reached a web host look for it there
  ready          written last, once every server listens

It serves HTTP on port 80 and HTTPS on port 443 of every address in ADDRESSES (IPv4 and IPv6),
the same paths on each:

  /                  "spear test web host\\n" (text/plain)
  /html              an HTML page (title, headings, a link, a script and a style to strip)
  /text              text/plain; charset=utf-8
  /json              application/json
  /pdf               application/pdf: one page reading "spear test pdf"
  /image             image/png (1x1)
  /headers           the request's headers as JSON (and the peer's address)
  /status/N          status N, a short text body
  /echo?ct=T&body=B  status 200 (or &status=N), Content-Type T, body B (or &b64=BASE64)
  /files/NAME        DIR/files/NAME (Content-Type from &ct= or the name's extension)
  /redirect?to=URL   a redirect to URL (&status=302 by default; 301, 303, 307, 308 too)
  /r                 302 to http://169.254.169.254/latest/meta-data/ (red-team case SSR-19)
  /loop              302 to /loop, forever
  /chain/N           N redirects: 302 to /chain/N-1; /chain/0 answers "end of chain\\n"
  /slow              slowloris: the response's head, one byte a second, forever
  /slow/body         the head at once (Content-Length: 1000000), then one byte a second
  /stall             the head at once, then nothing (until the client leaves)
  /bomb              Content-Encoding: gzip, chunked, no Content-Length: a gzip stream of zeros
                     made on the fly (about 1 KB of gzip per MB), inflating to 4 GiB (&gib=N)
  /big               100 MiB of "a" with Content-Length (&mib=N; &length=0: chunked, no length)
  /searxng/search    a SearXNG instance's JSON answer (the searxng backend, url
                     http://public.test/searxng): for ?q=Q&format=json, the results of searxng()
                     echoing Q; without format=json, 403 as SearXNG answers when JSON is off

The HTTPS servers answer with server.pem, but 93.184.216.36 (untrusted.test) with untrusted.pem.
The TLS handshake happens in the connection's own thread, so a stalled client stalls nobody.
"""

import base64
import http.server
import json
import mimetypes
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import zlib

# Keep in step with scripts/test-host.sh (which puts these on the host's interface and routes them
# in the tests' namespace) and with its DNS table.
ADDRESSES = ["93.184.216.34", "93.184.216.35", "93.184.216.36", "2a0b:4d07::34", "2a0b:4d07::35"]
UNTRUSTED = "93.184.216.36"
SERVER_NAMES = [
    "public.test", "second.test", "v6only.test", "dual.test", "multi.test", "mixed6.test",
    "rebind.test",
]
SERVER_IPS = ["93.184.216.34", "93.184.216.35", "2a0b:4d07::34", "2a0b:4d07::35"]

HTML = b"""<!doctype html>
<html><head><title>spear test page</title>
<style>body { color: red }</style>
<script>document.write("script text")</script>
</head><body>
<h1>Spear test page</h1>
<p>A paragraph of <b>test</b> text, with <a href="/text">a link</a>.</p>
<h2>Second heading</h2>
<ul><li>one</li><li>two</li></ul>
</body></html>
"""


def pdf():
    """A minimal valid PDF: one page, the text "spear test pdf" in Helvetica."""
    stream = b"BT /F1 24 Tf 72 720 Td (spear test pdf) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (i, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def png():
    """A 1x1 PNG (one red pixel)."""
    import struct

    def chunk(kind, data):
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


PDF = pdf()
PNG = png()


def searxng(query):
    """A SearXNG JSON answer for `query`: markup in a title and a snippet (made plain by spear),
    two results whose url is not http(s) (dropped by spear), and two that are."""
    return {
        "query": query,
        "number_of_results": 4,
        "results": [
            {"title": f"First <b>result</b> for {query}", "url": "http://public.test/html",
             "content": f"A snippet about <em>{query}</em> &amp; more", "engine": "test"},
            {"title": "A script", "url": "javascript:alert(1)", "content": "never shown"},
            {"title": "A local file", "url": "file:///etc/passwd", "content": "never shown"},
            {"title": f"Second result for {query}", "url": "https://second.test/text",
             "content": "", "engine": "test"},
        ],
    }


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_certificates(d):
    """The CA, the server's certificate signed by it, and an untrusted self-signed one."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem", "-days", "3",
            "-subj", "/CN=spear test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    san = ",".join([f"DNS:{n}" for n in SERVER_NAMES] + [f"IP:{a}" for a in SERVER_IPS])
    with open(f"{d}/server.ext", "w") as f:
        f.write(f"subjectAltName={san}\n"
                "basicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=serverAuth\n")
    openssl("req", "-new", *ec, "-keyout", f"{d}/server.key", "-out", f"{d}/server.csr",
            "-subj", "/CN=public.test")
    openssl("x509", "-req", "-in", f"{d}/server.csr", "-CA", f"{d}/ca.pem", "-CAkey",
            f"{d}/ca.key", "-set_serial", "2", "-days", "3", "-extfile", f"{d}/server.ext",
            "-out", f"{d}/server.pem")
    openssl("req", "-x509", *ec, "-keyout", f"{d}/untrusted.key", "-out", f"{d}/untrusted.pem",
            "-days", "3", "-subj", "/CN=untrusted.test",
            "-addext", f"subjectAltName=DNS:untrusted.test,IP:{UNTRUSTED}",
            "-addext", "basicConstraints=critical,CA:FALSE",
            "-addext", "extendedKeyUsage=serverAuth")
    os.remove(f"{d}/server.csr")
    os.remove(f"{d}/server.ext")
    for name in ("ca.key", "server.key", "untrusted.key"):
        os.chmod(f"{d}/{name}", 0o600)
    for name in ("ca.pem", "server.pem", "untrusted.pem"):
        os.chmod(f"{d}/{name}", 0o644)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "spear-test-web-host"
    files = None
    log = None
    log_lock = threading.Lock()

    def log_message(self, *args):
        pass

    def record(self):
        # One line per request, before it is answered: "HOST TARGET" (the target as sent).
        line = f"{self.headers.get('Host', '')} {self.path}\n".encode("utf-8", "replace")
        with Handler.log_lock, open(Handler.log, "ab") as f:
            f.write(line)

    def respond(self, status, ctype, body, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, to, status=302):
        # Header values are ASCII: anything else is sent percent-encoded (as UTF-8).
        to = urllib.parse.quote(to, safe="".join(chr(c) for c in range(0x21, 0x7F)))
        body = f"redirect to {to}\n".encode()
        self.respond(status, "text/plain", body, [("Location", to)])

    def chunked(self, status, headers, chunks):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for data in chunks:
            if data:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")

    def do_GET(self):
        try:
            self.record()
            self.route()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, TimeoutError, OSError):
            self.close_connection = True
        except (KeyError, ValueError) as e:
            # A path asked for wrongly (/redirect without to=, /status/x): say so.
            self.respond(400, "text/plain", f"bad request: {e!r}\n".encode())

    def route(self):
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        if path == "/":
            self.respond(200, "text/plain", b"spear test web host\n")
        elif path == "/html":
            self.respond(200, "text/html; charset=utf-8", HTML)
        elif path == "/text":
            self.respond(200, "text/plain; charset=utf-8", "plain text, caf\u00e9\n".encode())
        elif path == "/json":
            self.respond(200, "application/json", b'{"name": "spear", "list": [1, 2, 3]}\n')
        elif path == "/pdf":
            self.respond(200, "application/pdf", PDF)
        elif path == "/image":
            self.respond(200, "image/png", PNG)
        elif path == "/headers":
            seen = {k.lower(): v for k, v in self.headers.items()}
            seen["x-peer"] = self.client_address[0]
            self.respond(200, "application/json", json.dumps(seen).encode())
        elif path.startswith("/status/"):
            status = int(path[len("/status/"):])
            self.respond(status, "text/plain", f"status {status}\n".encode())
        elif path == "/echo":
            body = base64.b64decode(q["b64"]) if "b64" in q else q.get("body", "").encode()
            self.respond(int(q.get("status", "200")), q.get("ct", "text/plain"), body)
        elif path.startswith("/files/"):
            name = path[len("/files/"):]
            if not name or "/" in name or name.startswith("."):
                self.respond(404, "text/plain", b"no such file\n")
                return
            try:
                with open(os.path.join(self.files, name), "rb") as f:
                    body = f.read()
            except OSError:
                self.respond(404, "text/plain", b"no such file\n")
                return
            ctype = q.get("ct") or mimetypes.guess_type(name)[0] or "application/octet-stream"
            self.respond(200, ctype, body)
        elif path == "/searxng/search":
            if q.get("format") != "json":
                self.respond(403, "text/html", b"<h1>403 Forbidden</h1>\n")
                return
            body = json.dumps(searxng(q["q"])).encode()
            self.respond(200, "application/json", body)
        elif path == "/redirect":
            self.redirect(q["to"], int(q.get("status", "302")))
        elif path == "/r":
            self.redirect("http://169.254.169.254/latest/meta-data/")
        elif path == "/loop":
            self.redirect("/loop")
        elif path.startswith("/chain/"):
            n = int(path[len("/chain/"):])
            if n > 0:
                self.redirect(f"/chain/{n - 1}")
            else:
                self.respond(200, "text/plain", b"end of chain\n")
        elif path == "/slow":
            head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Slow: " + b"x" * 100000
            for byte in head:
                self.wfile.write(bytes([byte]))
                time.sleep(1)
        elif path == "/slow/body":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            for _ in range(1000000):
                self.wfile.write(b"x")
                time.sleep(1)
        elif path == "/stall":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"x")
            time.sleep(3600)
        elif path == "/bomb":
            self.chunked(200, [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")],
                         bomb(int(q.get("gib", "4"))))
        elif path == "/big":
            mib = int(q.get("mib", "100"))
            block = b"a" * (1 << 20)
            if q.get("length", "1") == "0":
                self.chunked(200, [("Content-Type", "text/plain")], (block for _ in range(mib)))
            else:
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(mib << 20))
                self.end_headers()
                for _ in range(mib):
                    self.wfile.write(block)
        else:
            self.respond(404, "text/plain", b"not found\n")


def bomb(gib):
    """gzip of `gib` GiB of zeros, compressed while it is sent."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1 << 20)
    for _ in range(gib << 10):
        yield c.compress(zeros)
    yield c.flush()


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    tls = None

    def finish_request(self, request, client_address):
        if self.tls is not None:
            request.settimeout(10)
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
            request.settimeout(None)
        self.RequestHandlerClass(request, client_address, self)

    def handle_error(self, request, client_address):
        pass


class Server6(Server):
    address_family = socket.AF_INET6


def main():
    d = sys.argv[1]
    make_certificates(d)
    files = os.path.join(d, "files")
    os.makedirs(files, exist_ok=True)
    os.chmod(files, 0o1777)
    Handler.files = files
    Handler.log = os.path.join(d, "requests.log")
    with open(Handler.log, "w"):
        pass
    os.chmod(Handler.log, 0o644)
    contexts = {}
    for name in ("server", "untrusted"):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(f"{d}/{name}.pem", f"{d}/{name}.key")
        contexts[name] = ctx
    servers = []
    for addr in ADDRESSES:
        cls = Server6 if ":" in addr else Server
        servers.append(cls((addr, 80), Handler))
        s = cls((addr, 443), Handler)
        s.tls = contexts["untrusted" if addr == UNTRUSTED else "server"]
        servers.append(s)
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    with open(os.path.join(d, "ready"), "w") as f:
        f.write("ready\n")
    threading.Event().wait()


if __name__ == "__main__":
    main()
