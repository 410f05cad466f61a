"""A PostgreSQL unix socket that forwards to the server's and can be cut: what a controller
reaches its state database through in the failover benchmark (benchmarks/failover_rig.py), so
that its network to the database, and only its, fails."""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path


class Proxy:
    """A PostgreSQL unix socket in `folder` forwarding to the server's; `cut()` closes every
    connection through it and refuses new ones until `restore()`."""

    def __init__(self, folder: Path, target: str) -> None:
        self.target, self.cut_off = target, False
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / Path(target).name
        path.unlink(missing_ok=True)
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(str(path))
        self.listener.listen(64)
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.cut_off:
                client.close()
                continue
            server = socket.socket(socket.AF_UNIX)
            try:
                server.connect(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()

    def cut(self) -> None:
        self.cut_off = True
        with self.lock:
            for s in self.open:
                _close(s)
            self.open.clear()

    def restore(self) -> None:
        self.cut_off = False

    def close(self) -> None:
        self.cut()
        _close(self.listener)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    _close(src)
    _close(dst)


def _close(s: socket.socket) -> None:
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)
    s.close()
