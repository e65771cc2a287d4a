"""Regenerate the screenshots of docs/dashboard.md: ``python docs/dashboard_screenshots.py``.

Builds a SQLite store in a temporary folder with jobs of the example sheets
(``jobdefs/``) in every state, through the backend verbs on a hand-moved
clock (attempts that retried, one that started late, dead jobs, a failing
outbox message, a paused queue, an order's flow half way through), serves
the dashboard with uvicorn on loopback and photographs its pages in headless Chromium (Debian's
``/usr/bin/chromium`` driven by Playwright). The PNGs go to
``docs/images/dashboard-*.png``.

The pages carry Japanese titles: without a font that covers them Chromium draws
empty boxes, so the script refuses to run until ``fc-list :lang=ja`` names one
(Debian: ``apt-get install fonts-noto-cjk``).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from jobdef import __version__
from jobdef.backends import open_backend, upgrade
from jobdef.backends.protocol import Backend
from jobdef.backends.records import ClaimOptions, ErrorInfo, JobRecord, NewJob, Notification
from jobdef.backends.workers import WorkerInfo
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry

ROOT = Path(__file__).resolve().parent.parent
SHEETS = ROOT / "jobdefs"
IMAGES = ROOT / "docs" / "images"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SMTP = ErrorInfo("smtplib.SMTPServerDisconnected", "Connection unexpectedly closed", "")
NOT_FOUND = ErrorInfo("app.errors.ReservationNotFound", "reservation 4512 does not exist", "")


CJK_FONT_PACKAGE = "fonts-noto-cjk"


def missing_cjk_font() -> str | None:
    """Why the screenshots would show Japanese as empty boxes, or None when a font covers it.

    Asks fontconfig, which Chromium asks too, for the fonts that cover Japanese.
    """
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return (
            "fc-list not found, so no font covering Japanese can be checked: "
            f"apt-get install fontconfig {CJK_FONT_PACKAGE}"
        )
    found = subprocess.run(
        [fc_list, ":lang=ja", "family"], capture_output=True, text=True, check=False
    )
    if found.returncode != 0 or not found.stdout.strip():
        return (
            "no font covers Japanese (fc-list :lang=ja lists none), so the titles would be "
            f"empty boxes: apt-get install {CJK_FONT_PACKAGE}"
        )
    return None


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def fill(url: str) -> tuple[int, int]:
    """Jobs of the example sheets in every state; returns the id of one worth a close
    look and that of a flow half way through."""
    upgrade(url)
    clock = Clock(time.time() - 3000)
    store = open_backend(url, clock=clock)
    lease = ClaimOptions(worker_id="web-1:4242", lease_seconds=300, limit=50)
    try:
        # An hour of history: mails and points, most done, a few retried.
        for minute in range(0, 45, 3):
            clock.now += 180
            store.enqueue(
                [NewJob("send_reservation_mail", {"reservation_id": 4400 + minute}, "mail", 0, 5)]
                + [
                    NewJob(
                        "award_member_points",
                        {"order_id": 900 + minute + i, "member_id": 17, "points": 120},
                        "points",
                        0,
                        5,
                    )
                    for i in range(3)
                ]
            )
            clock.now += 1
            done = store.claim(lease)
            failed, ok = done[:1] if minute % 9 == 0 else [], done[1:] if minute % 9 == 0 else done
            store.complete([r.lease for r in ok])
            for record in failed:
                store.retry(record.lease, SMTP, clock.now + 30, 30)
        clock.now += 40
        store.complete([r.lease for r in store.claim(lease)])
        # One mail that retried and started late, the other which went dead twice over.
        [late] = store.enqueue(
            [NewJob("send_reservation_mail", {"reservation_id": 4512}, "mail", 0, 5)]
        )
        for step, (wait, error) in enumerate([(2, SMTP), (35, SMTP), (400, NOT_FOUND)]):
            clock.now += wait
            [record] = store.claim(ClaimOptions("web-2:4343", 300, queues=["mail"]))
            clock.now += 1.5
            if step < 2:
                store.retry(record.lease, error, clock.now + 30, 30)
            else:
                note = Notification(
                    "ops-chat",
                    "dead",
                    "send_reservation_mail",
                    {"id": record.id},
                    f"dead-{record.id}",
                )
                store.bury(record.lease, error, notifications=[note])
        for reservation in (4601, 4602, 4603):
            store.enqueue(
                [NewJob("send_reservation_mail", {"reservation_id": reservation}, "mail", 0, 5)]
            )
            [record] = store.claim(ClaimOptions("web-2:4343", 300, queues=["mail"]))
            store.bury(record.lease, NOT_FOUND)
        [message] = store.outbox_claim(10, 30)
        store.outbox_failed(message.id, "webhook answered 503 Service Unavailable", clock.now + 600)
        # A backlog: exports waiting in a paused queue, images being resized.
        clock.now = time.time() - 120
        store.enqueue(
            [
                NewJob("export_csv", {"export_id": i, "month": "2026-11"}, "exports", 0, 2)
                for i in range(1, 5)
            ]
            + [
                NewJob("resize_image", {"image_id": 300 + i, "width": 640}, "media", 0, 3)
                for i in range(6)
            ]
        )
        store.claim(ClaimOptions("img-1:77", 300, limit=2, queues=["media"]))
        store.set_paused("exports", True)
        # The workers table: the image worker beating, the mail worker gone quiet.
        for worker, queues, beat_ago in (("img-1:77", ("media",), 4), ("web-2:4343", None, 900)):
            clock.now = time.time() - beat_ago
            host, pid = worker.split(":")
            info = WorkerInfo(
                id=worker,
                host=host,
                pid=int(pid),
                queues=queues,
                concurrency=2,
                lease_seconds=300.0,
                version=__version__,
                started_at=0.0,
                last_beat=0.0,
            )
            store.register_worker(info)
        return late.id, _flows(store, clock)
    finally:
        store.close()


def _flows(store: Backend, clock: Clock) -> int:
    """Three order_placed flows: one done, one cancelled, and one half way through (its
    charge done, its receipt mail running, its points retried once), whose id is
    returned: the graph with a step in each state worth showing."""
    queue = Queue(store, load_registry([SHEETS]))
    options = ClaimOptions("web-1:4242", 300, limit=5, queues=["payments", "receipts", "points"])

    def start(order: int) -> int:
        return queue.start("order_placed", {"order_id": order, "member_id": 17, "amount": 4800}).id

    def run(order: int, finish: bool = True) -> list[JobRecord]:
        claimed = store.claim(options)
        clock.now += 1.3
        charge = json.dumps({"charge_id": f"ch_{order}", "amount": 4800})
        charges = {r.id: charge for r in claimed if r.job == "charge_order"}
        done = [r for r in claimed if finish or r.job == "charge_order"]
        store.complete([r.lease for r in done], results=charges)
        clock.now += 0.4
        return [r for r in claimed if r not in done]

    clock.now = time.time() - 1500
    start(6998)
    for _ in range(3):  # charge; the mail and the points; the ledger
        run(6998)
    clock.now += 200
    cancelled = start(6999)
    clock.now += 30
    queue.cancel_flow(cancelled, "the customer cancelled the order")
    clock.now = time.time() - 90
    half = start(7001)
    run(7001)
    for record in run(7001, finish=False):
        if record.job == "award_member_points":
            store.retry(record.lease, SMTP, clock.now + 30, 30)
    return half


def main() -> int:
    reason = missing_cjk_font()
    if reason is not None:
        print(f"docs/dashboard_screenshots.py: {reason}", file=sys.stderr)
        return 1
    import uvicorn
    from playwright.sync_api import sync_playwright

    from jobdef.dashboard import create_app

    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'jobs.db'}"
        late, flow = fill(url)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        app = create_app(url, SHEETS)
        server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=0.3)
        )
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.02)
        shots = {
            "overview": "/",
            "jobs": "/jobs?queue=mail",
            "job": f"/jobs/{late}",
            "dead": "/dead",
            "workers": "/workers",
            "sheets": "/sheets",
            "flows": "/flows",
            "flow": f"/flows/{flow}",
        }
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
                )
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                for name, path in shots.items():
                    page.goto(base + path)
                    page.wait_for_load_state("networkidle")
                    target = IMAGES / f"dashboard-{name}.png"
                    page.screenshot(path=str(target), full_page=name != "sheets")
                    print(f"wrote {target.relative_to(ROOT)}")
                browser.close()
        finally:
            server.should_exit = True
            thread.join(30)
            sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
