"""A loopback gateway in front of one session's MCP endpoint that adds the client key, as a
host's gateway does: MCP test clients (the conformance suite) send no credentials.

Everything else passes through unchanged: method, path's query, headers (``Origin`` and
``Host`` too, so DNS-rebinding checks see what the client sent), body, status and headers back.

    python -m tests.support.mcp_proxy <upstream mcp url> <client key> [port]
"""
from __future__ import annotations

import http.client
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
              "transfer-encoding", "upgrade", "content-length", "authorization"}


def _handler(upstream: str, key: str) -> type[BaseHTTPRequestHandler]:
    target = urlsplit(upstream)

    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {name: value for name, value in self.headers.items() if name.lower() not in HOP_BY_HOP}
            headers["Authorization"] = f"Bearer {key}"
            connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            try:
                connection.putrequest(self.command, target.path, skip_host=True, skip_accept_encoding=True)
                for name, value in headers.items():
                    connection.putheader(name, value)
                connection.putheader("Content-Length", str(len(body or b"")))
                connection.endheaders(body)
                response = connection.getresponse()
                payload = response.read()
            finally:
                connection.close()
            self.send_response(response.status)
            for name, value in response.getheaders():
                if name.lower() not in HOP_BY_HOP:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_POST = do_GET = do_DELETE = do_PUT = _forward

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Forward


class McpGateway:
    """The proxy on a free loopback port, in a thread of the test process."""

    def __init__(self, upstream: str, key: str, port: int = 0) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _handler(upstream, key))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/mcp"

    def __enter__(self) -> McpGateway:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


if __name__ == "__main__":
    with McpGateway(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0) as gateway:
        print(gateway.url, flush=True)
        gateway.thread.join()
