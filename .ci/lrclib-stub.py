"""A stand-in LRCLIB on loopback for the end-to-end test and the lyrics load script: every
GET answers the given fixture (a record as /api/get returns it), so no public service is
reached.

    python3 .ci/lrclib-stub.py PORT FIXTURE.json
"""

import http.server
import sys

port, path = int(sys.argv[1]), sys.argv[2]
with open(path, "rb") as fixture:
    body = fixture.read()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
