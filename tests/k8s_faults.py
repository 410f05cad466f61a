"""A fault-injecting HTTPS proxy in front of the local API server (tests/k8s_local.py): the
Kubernetes executor under test talks to it through a kubeconfig of its own (`kubeconfig`),
and it forwards every request unless a rule says to answer it otherwise. The test's own view
of the cluster (k8s_local's Kube) goes to the API server directly.

It serves TLS with the API server's own certificate (for 127.0.0.1), so the kubeconfig keeps
the CA and the token: the client's TLS path is the one it takes in production. Rules, in
order; the first whose `method` is the request's and whose `path` (a regular expression)
matches its path counts the request; once more than `skip` were seen, the next `times` get
`mode`:
- 503: answered `503 Service Unavailable` (a Status), nothing reaches the server;
- 429: answered `429 Too Many Requests` (a Status: the server sheds load), nothing reaches it;
- garbage: answered 200 with a body that is not JSON, nothing reaches the server;
- empty: answered 200 with `{}` (JSON, but no items), nothing reaches the server;
- truncated: forwarded, the first half of the server's answer returned (as a whole answer);
- cut: forwarded, the answer's headers and half its body sent, then the connection closed;
- drop: the connection closed without an answer, nothing reaches the server;
- hang: nothing reaches the server and nothing comes back for `seconds` (past the caller's
  timeout), then the connection is closed;
- lost: forwarded (the server acts), then the connection closed without an answer.
Every request is logged (`calls()`): when it came, method, path, the mode it got. Standard
library only, plus PyYAML for the kubeconfig.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

MODES = ("503", "429", "garbage", "empty", "truncated", "cut", "drop", "hang", "lost")
GARBAGE = b'<html><body>502 Bad Gateway</body></html>\n{"items": [}\n'
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection"}


@dataclass(frozen=True)
class Call:
    t: float  # when the request came (time.time())
    method: str
    path: str  # without the query
    mode: str  # the fault it got, "" for none


@dataclass
class Rule:
    method: str
    path: re.Pattern[str]
    mode: str
    skip: int
    times: int
    seconds: float
    seen: int = 0
    fired: int = 0


@dataclass
class FaultyKube:
    """`FaultyKube.start(folder, upstream_kubeconfig)`; `close()` at the end."""

    kubeconfig: Path
    upstream: tuple[str, int]
    upstream_tls: ssl.SSLContext
    server: ThreadingHTTPServer
    rules: list[Rule] = field(default_factory=list)
    log: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def start(cls, folder: Path, upstream_kubeconfig: Path) -> FaultyKube:
        config = yaml.safe_load(upstream_kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        url = urlsplit(cluster["server"])
        ca = Path(cluster["certificate-authority"])
        upstream_tls = ssl.create_default_context(cafile=str(ca))
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(ca, ca.with_suffix(".key"))  # the API server's own (127.0.0.1)
        server = _Server(("127.0.0.1", 0), _Handler, tls)
        folder.mkdir(parents=True, exist_ok=True)
        kubeconfig = folder / "kubeconfig"
        port = server.server_address[1]
        for c in config["clusters"]:
            c["cluster"]["server"] = f"https://127.0.0.1:{port}"
        kubeconfig.write_text(yaml.safe_dump(config))
        proxy = cls(
            kubeconfig, (url.hostname or "127.0.0.1", url.port or 443), upstream_tls, server
        )
        server.proxy = proxy
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return proxy

    def inject(
        self,
        method: str,
        path: str,
        mode: str,
        skip: int = 0,
        times: int = 1,
        seconds: float = 30.0,
    ) -> None:
        """Requests `method` on a path matching `path`: after `skip` of them, `times` get
        `mode` (one of MODES)."""
        assert mode in MODES, mode
        rule = Rule(method.upper(), re.compile(path), mode, skip, times, seconds)
        with self.lock:
            self.rules.append(rule)

    def clear(self) -> None:
        with self.lock:
            self.rules.clear()

    def calls(self, method: str | None = None, path: str = "") -> list[Call]:
        with self.lock:
            return [
                c
                for c in self.log
                if (method is None or c.method == method.upper()) and re.search(path, c.path)
            ]

    def close(self) -> None:
        self.stop.set()  # hanging requests end
        self.server.shutdown()
        self.server.server_close()

    def _mode(self, method: str, path: str) -> tuple[str, float]:
        """The fault this request gets ("" for none), logged."""
        mode, seconds = "", 0.0
        with self.lock:
            rule = next((r for r in self.rules if r.method == method and r.path.search(path)), None)
            if rule is not None:
                rule.seen += 1
                if rule.seen > rule.skip and rule.fired < rule.times:
                    rule.fired += 1
                    mode, seconds = rule.mode, rule.seconds
            self.log.append(Call(time.time(), method, path, mode))
        return mode, seconds

    def _forward(
        self, method: str, target: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        host, port = self.upstream
        conn = http.client.HTTPSConnection(host, port, context=self.upstream_tls, timeout=60)
        try:
            conn.request(method, target, body=body, headers=headers)
            answer = conn.getresponse()
            data = answer.read()
            kept = [(k, v) for k, v in answer.getheaders() if k.lower() not in HOP]
            return answer.status, answer.reason, kept, data
        finally:
            conn.close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    proxy: FaultyKube

    def __init__(self, address: tuple[str, int], handler: type, tls: ssl.SSLContext) -> None:
        self.tls = tls
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = self.socket.accept()
        # the handshake in the request's own thread (a hanging one must not hold the others)
        return self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the API server
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._proxied()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _proxied(self) -> None:
        proxy = self.server.proxy
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        path = self.path.split("?")[0]
        mode, seconds = proxy._mode(self.command, path)
        if mode == "hang":
            proxy.stop.wait(seconds)
            self.close_connection = True
            return
        if mode == "drop":
            self.close_connection = True
            return
        if mode in ("503", "429"):
            code = int(mode)
            reason, message = {
                503: ("ServiceUnavailable", "injected: the server is unavailable"),
                429: ("TooManyRequests", "injected: too many requests, please try again later"),
            }[code]
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": message,
                "reason": reason,
                "code": code,
            }
            phrase = "Service Unavailable" if code == 503 else "Too Many Requests"
            self._answer(code, phrase, [], json.dumps(status).encode())
            return
        if mode in ("garbage", "empty"):
            data = GARBAGE if mode == "garbage" else b"{}"
            self._answer(200, "OK", [("Content-Type", "application/json")], data)
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        status, reason, kept, data = proxy._forward(self.command, self.path, headers, body)
        if mode == "lost":  # the server acted, its answer never comes back
            self.close_connection = True
            return
        if mode == "truncated":
            data = data[: len(data) // 2]
        if mode == "cut":
            self.send_response(status, reason)
            for k, v in kept:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self._answer(status, reason, kept, data)

    def _answer(
        self, status: int, reason: str, headers: list[tuple[str, str]], data: bytes
    ) -> None:
        self.send_response(status, reason)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
