"""A local HTTP mirror for download tests: each path answers with a route (a function that
writes the whole reply), and every request is recorded with its Authorization header. The
`serve` fixture (conftest.py) starts as many as a test needs and stops them at teardown."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# A route answers one GET: it gets the handler and writes the whole reply itself.
Route = Callable[[BaseHTTPRequestHandler], None]
Requests = list[tuple[str, str | None]]  # (path, Authorization header)
Serve = Callable[[dict[str, Route]], tuple[str, Requests]]


class RouteHandler(BaseHTTPRequestHandler):
    routes: dict[str, Route]
    requests: Requests

    def do_GET(self) -> None:
        self.requests.append((self.path, self.headers.get("Authorization")))
        route = self.routes.get(self.path) or self.routes.get("*")
        if route is None:
            self.send_error(404)
            return
        # the client may hang up: what a bounded download does to an endless body
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            route(self)

    def log_message(self, format: str, *args: object) -> None:
        return


@contextlib.contextmanager
def route_servers() -> Iterator[Serve]:
    """start(routes) -> (base_url, requests seen); every server started stops on exit."""
    servers: list[ThreadingHTTPServer] = []

    def start(routes: dict[str, Route]) -> tuple[str, Requests]:
        requests: Requests = []
        handler = type("Handler", (RouteHandler,), {"routes": routes, "requests": requests})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        host, port = server.server_address[:2]
        return f"http://{host!s}:{port}", requests

    try:
        yield start
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
