"""A TCP proxy on loopback that adds a round-trip delay: every chunk waits half of it
in each direction, as a network between hosts would (this kernel has no ``netem``).

Each connection gets two pumps per direction: a reader that stamps each chunk it
receives and a sender that hands it on once half the round trip has passed since
the stamp, in order. Chunks in flight do not wait for each other, so the delay
adds latency and takes no bandwidth. The pumps are threads, not asyncio tasks:
asyncio's timers wake through ``epoll``, whose timeout is whole milliseconds, so
a 0.25 ms wait there takes about 1.2 ms; ``time.sleep`` takes about 0.3 ms.

    python bench/delay_proxy.py --rtt 2ms --listen 6543 --to 127.0.0.1:5432  # run one
    python bench/delay_proxy.py --check                                       # verify

``--check`` measures what the proxy adds: the median round trip of ``SELECT 1`` to
PostgreSQL directly and through proxies of 0, 0.5 and 2 ms, and the CPU the proxy
spent per round trip. :class:`DelayProxy` runs one in a thread of the caller (the
fleet bench runs it in a process of its own).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence

CHUNK = 65536


def _seconds(text: str) -> float:
    """``2ms``, ``0.5ms``, ``0`` (milliseconds unless ``s`` is written) as seconds."""
    if text.endswith("ms"):
        return float(text[:-2]) / 1000
    if text.endswith("s"):
        return float(text[:-1])
    return float(text) / 1000


class DelayProxy:
    """Listen on ``127.0.0.1:listen`` (0: any free port), forward to ``target``, holding
    every chunk for ``rtt / 2`` in each direction."""

    def __init__(self, target: tuple[str, int], rtt: float, listen: int = 0) -> None:
        self.target = target
        self.half = rtt / 2
        self.server = socket.create_server(("127.0.0.1", listen))
        self.port = self.server.getsockname()[1]
        self.connections = 0
        self._closed = threading.Event()

    def serve_forever(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            self.connections += 1
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._pump(client, upstream)
            self._pump(upstream, client)

    def start(self) -> DelayProxy:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def close(self) -> None:
        self._closed.set()
        self.server.close()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        """Carry ``source`` to ``sink``: a reader that stamps chunks, a sender that waits."""
        chunks: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()

        def read() -> None:
            try:
                while data := source.recv(CHUNK):
                    chunks.put((time.perf_counter() + self.half, data))
            except OSError:
                pass
            chunks.put((0.0, b""))

        def send() -> None:
            try:
                while True:
                    due, data = chunks.get()
                    if not data:
                        break
                    wait = due - time.perf_counter()
                    if wait > 0:
                        time.sleep(wait)
                    sink.sendall(data)
            except OSError:
                pass
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

        threading.Thread(target=read, daemon=True).start()
        threading.Thread(target=send, daemon=True).start()


def _ping_ms(port: int, host: str, rounds: int) -> float:
    """Median milliseconds of ``SELECT 1`` on one connection through ``host:port``."""
    import psycopg

    with psycopg.connect(f"postgresql://postgres@{host}:{port}/postgres", autocommit=True) as conn:
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            conn.execute("SELECT 1").fetchone()
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds process ``pid`` has used (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def proxy_process(target: tuple[str, int], rtt: float) -> Iterator[tuple[int, int]]:
    """A proxy in a process of its own: ``(port, pid)``; stopped when the block ends."""
    command = [sys.executable, __file__, "--rtt", f"{rtt}s", "--to", f"{target[0]}:{target[1]}"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield int(process.stdout.readline()), process.pid
    finally:
        process.terminate()
        process.wait(10)


def check(target: tuple[str, int], rounds: int) -> str:
    """What proxies of 0, 0.5 and 2 ms add to a round trip, and the CPU they spend."""
    direct = _ping_ms(target[1], target[0], rounds)
    lines = [f"direct: {direct:.3f} ms per SELECT 1 (median of {rounds})"]
    for rtt in (0.0, 0.0005, 0.002):
        with proxy_process(target, rtt) as (port, pid):
            before = cpu_seconds(pid)
            through = _ping_ms(port, "127.0.0.1", rounds)
            spent = cpu_seconds(pid) - before
        lines.append(
            f"proxy {rtt * 1000:g} ms: {through:.3f} ms, adds {through - direct:.3f} ms; "
            f"the proxy used {spent / rounds * 1e6:.0f} us CPU per round trip"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtt", default="0", help="round trip added, e.g. 0.5ms or 2ms")
    parser.add_argument("--listen", type=int, default=0, help="port on 127.0.0.1 (0: any)")
    parser.add_argument("--to", default="127.0.0.1:5432", help="host:port to forward to")
    parser.add_argument("--check", action="store_true", help="measure what it adds, then exit")
    parser.add_argument("--rounds", type=int, default=500, help="round trips per --check")
    args = parser.parse_args(argv)
    host, _, port = args.to.rpartition(":")
    target = (host, int(port))
    if args.check:
        print(check(target, args.rounds))
        return 0
    proxy = DelayProxy(target, _seconds(args.rtt), args.listen)
    print(proxy.port, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        proxy.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
