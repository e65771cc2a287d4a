"""A TCP proxy on loopback that a test cuts and restores: what a restart of a server
(PostgreSQL, Redis) looks like from a process that reaches it through the proxy,
without restarting the server that other tests share."""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading


class CuttableProxy:
    """A TCP proxy on loopback to the server at ``target``: :meth:`cut` closes every
    connection through it and refuses new ones until :meth:`restore`, as a server that
    restarts does; :meth:`close` at the end of the test."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._open = True
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, url: str) -> str:
        """``url`` (of the target) with its host and port replaced by the proxy's."""
        host, port = self.target
        for old in (f"{host}:{port}", host):
            if old in url:
                return url.replace(old, f"127.0.0.1:{self.port}", 1)
        raise ValueError(f"{url} does not name {host}:{port}")

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                if not self._open:
                    client.close()
                    continue
                try:
                    server = socket.create_connection(self.target)
                except OSError:
                    client.close()
                    continue
                self._pairs.append((client, server))
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        selector = selectors.DefaultSelector()
        selector.register(client, selectors.EVENT_READ, server)
        selector.register(server, selectors.EVENT_READ, client)
        try:
            while True:
                for key, _ in selector.select():
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    if not data:
                        return
                    key.data.sendall(data)
        except OSError:
            return
        finally:
            selector.close()
            client.close()
            server.close()

    def cut(self) -> None:
        with self._lock:
            self._open = False
            pairs, self._pairs = self._pairs, []
        for client, server in pairs:
            for end in (client, server):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def restore(self) -> None:
        with self._lock:
            self._open = True

    def close(self) -> None:
        self._closed = True
        self.cut()
        self.listener.close()
