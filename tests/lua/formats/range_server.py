#!/usr/bin/env python3
"""A loopback HTTP server with Range requests, for the tests of http:// sources (http.lua).

    range_server.py DIR PORTFILE COUNTFILE [RATE]

Serves the files of DIR on 127.0.0.1 at a free port, which it writes to PORTFILE once listening,
and keeps in COUNTFILE the body bytes it has sent so far (all clients: every rank's requests), so a
test can check that a load fetched only the ranges it needed. Python's own http.server answers no
Range requests, hence this one. With RATE (bytes per second) each body is sent at that rate, in
64 KiB pieces: a load that takes long enough for the progress bar (tests/formats/progress.py)."""
import email.utils
import http.server
import os
import re
import sys
import threading
import time

root, port_file, count_file = sys.argv[1:4]
rate = float(sys.argv[4]) if len(sys.argv) > 4 else 0
sent = 0
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self):
        self.respond(False)

    def do_GET(self):
        self.respond(True)

    def respond(self, body):
        global sent
        path = os.path.join(root, self.path.lstrip("/").split("?")[0])
        if not os.path.isfile(path):
            self.send_error(404)
            return
        st = os.stat(path)
        size, start, end, status = st.st_size, 0, st.st_size - 1, 200
        rng = self.headers.get("Range")
        if rng:
            m = re.fullmatch(r"bytes=(\d+)-(\d+)", rng.strip())
            if not m or int(m.group(1)) >= size:
                self.send_error(416)
                return
            start, end, status = int(m.group(1)), min(int(m.group(2)), size - 1), 206
        self.send_response(status)
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
        self.send_header("ETag", '"%d-%d-%d"' % (st.st_ino, st.st_mtime_ns, size))
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.end_headers()
        if body:
            with open(path, "rb") as f:
                f.seek(start)
                data = f.read(end - start + 1)
            with lock:  # counted before it is sent: the client may look as soon as it has it
                sent += len(data)
                with open(count_file + ".tmp", "w") as c:
                    c.write(str(sent))
                os.replace(count_file + ".tmp", count_file)
            if not rate:
                self.wfile.write(data)
                return
            for at in range(0, len(data), 65536):
                self.wfile.write(data[at:at + 65536])
                self.wfile.flush()
                time.sleep(min(65536, len(data) - at) / rate)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(count_file, "w") as c:
    c.write("0")
with open(port_file + ".tmp", "w") as p:
    p.write(str(server.server_address[1]))
os.replace(port_file + ".tmp", port_file)
server.serve_forever()
