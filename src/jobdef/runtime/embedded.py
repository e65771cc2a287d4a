"""The embedded worker: the normal worker loop in a background thread of an application.

For a small app or a development server that should run its jobs without a
separate ``jobdef worker`` deployment::

    queue = connect("sqlite:///app.db", load_registry(["jobdefs"]))
    with embedded_worker(queue):
        serve_the_app()        # enqueues jobs; the worker runs them meanwhile

It is :class:`~jobdef.runtime.worker.Worker` itself, with its own connection to
the store, so everything the worker does applies: handlers run in the usual
pool of child processes (a timeout kills the child, a crash takes only the
child), failures are classified by the sheet, a return value is held to the
sheet's ``result:`` (one it refuses fails the attempt with
``jobdef.ResultRefused``), retries, leases, heartbeats, the outbox and the
maintenance services (reclaim, the scheduler, retention of jobs and of their
stored results) run as in ``jobdef worker``.

What differs is how it stops. Signals reach only the main thread, which is the
application's, so the worker installs no signal handler here; the application
stops it: leaving the ``with`` block (or :meth:`EmbeddedWorker.stop`) drains
the worker (no new claims, running jobs get ``grace`` seconds, then are killed
and given back), and an interpreter that exits without that stops it from an
``atexit`` hook. A plain script that should drain on SIGTERM turns the signal
into an exit of the main thread (``signal.signal(SIGTERM, lambda *_: sys.exit(0))``).
If the process is killed outright (SIGKILL, the OOM killer), the children die
with it (Linux), the jobs it held keep their leases until these expire, and any
``jobdef worker`` (or the next embedded one) reclaims them per their sheets'
``on_reclaim``: nothing is lost.

A worker thread that fails (a store that cannot be opened, a handler that does
not import) does not fail quietly: the error is logged at once, :attr:`alive`
turns False, and :meth:`stop` (the end of the ``with`` block) raises it.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
from typing import Any

from jobdef.backends import open_backend
from jobdef.errors import JobdefError, UsageError
from jobdef.policy.registry import Registry
from jobdef.runtime.handlers import check_handlers
from jobdef.runtime.settings import WorkerSettings
from jobdef.runtime.worker import Worker, WorkerStats

log = logging.getLogger("jobdef.embedded")

# Past the drain's grace, how long stop() waits for the thread after the second stop
# request (which kills and releases what still runs) before it gives up waiting.
STOP_MARGIN = 10.0
# The settings of an embedded worker given none: those of ``jobdef worker`` with two
# handler processes, so one slow job does not hold up the application's others.
EMBEDDED_SETTINGS = WorkerSettings(concurrency=2)


class EmbeddedWorkerError(JobdefError):
    """The embedded worker's thread stopped on an error; the cause is chained."""


class EmbeddedWorker:
    """A :class:`~jobdef.runtime.worker.Worker` run in a daemon thread of this process.

    ``target``: a :class:`~jobdef.runtime.queue.Queue` (its store and sheets are
    used) or a database URL (then ``registry`` is required). ``settings``: the
    worker's own (default :data:`EMBEDDED_SETTINGS`, two handler processes).
    """

    def __init__(
        self,
        target: Any,
        registry: Registry | None = None,
        settings: WorkerSettings | None = None,
    ) -> None:
        url: Any = target
        if not isinstance(target, str):
            url = getattr(getattr(target, "backend", None), "url", None)
            registry = registry or getattr(target, "registry", None)
        if not isinstance(url, str):
            raise UsageError(
                "embedded_worker() takes a Queue from jobdef.connect() or a database URL"
            )
        if not isinstance(registry, Registry):
            raise UsageError(
                "embedded_worker(url) needs the sheets: pass registry=load_registry([...])"
            )
        self.url = url
        self.registry = registry
        self.settings = settings or EMBEDDED_SETTINGS
        self.stats: WorkerStats | None = None
        self.error: BaseException | None = None
        self._worker: Worker | None = None
        self._thread: threading.Thread | None = None

    @property
    def alive(self) -> bool:
        """The worker thread is running."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def worker(self) -> Worker | None:
        """The worker being run (its ``id``, ``stats`` and ``phase``), once started."""
        return self._worker

    def start(self) -> EmbeddedWorker:
        """Start the worker thread. A handler that cannot be called raises here, in the
        caller, as ``jobdef worker`` refuses to start."""
        if self._thread is not None:
            raise UsageError("this embedded worker was started already; make a new one")
        check_handlers(self.registry, self.settings.queues)
        backend = open_backend(self.url)  # a connection of its own, not the app's
        try:
            # Builds the maintenance services: a channel whose variable is missing fails here.
            self._worker = Worker(backend, self.registry, self.settings)
        except BaseException:
            backend.close()
            raise
        self._thread = threading.Thread(
            target=self._run, args=(self._worker,), name="jobdef-embedded-worker", daemon=True
        )
        self._thread.start()
        atexit.register(self._at_exit)
        return self

    def _run(self, worker: Worker) -> None:
        try:
            self.stats = worker.run()
        except BaseException as exc:
            self.error = exc
            log.exception("the embedded worker stopped on an error; its jobs are reclaimed")
        finally:
            worker.backend.close()

    def stop(self, timeout: float | None = None) -> WorkerStats | None:
        """Drain and stop as the module says, with ``timeout`` seconds for running jobs in
        place of the grace; blocks until the thread ends and raises
        :class:`EmbeddedWorkerError` if it had stopped on an error."""
        atexit.unregister(self._at_exit)
        worker, thread = self._worker, self._thread
        if worker is not None and thread is not None and thread.is_alive():
            grace = self.settings.grace if timeout is None else timeout
            worker.request_stop()
            thread.join(grace + 1.0)
            if thread.is_alive():
                worker.request_stop()  # the second request: kill and release now
                thread.join(STOP_MARGIN)
            if thread.is_alive():
                log.error(
                    "the embedded worker did not stop within %.0fs; its leases expire and "
                    "other workers reclaim its jobs",
                    grace + 1.0 + STOP_MARGIN,
                )
        if self.error is not None:
            raise EmbeddedWorkerError(f"the embedded worker stopped: {self.error}") from self.error
        return self.stats

    def _at_exit(self) -> None:
        """The interpreter is exiting without stop(): drain, as stop() does."""
        with contextlib.suppress(EmbeddedWorkerError):  # logged when it happened
            self.stop()

    def __enter__(self) -> EmbeddedWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def embedded_worker(
    target: Any, registry: Registry | None = None, settings: WorkerSettings | None = None
) -> EmbeddedWorker:
    """An :class:`EmbeddedWorker` to use as ``with embedded_worker(queue): ...``."""
    return EmbeddedWorker(target, registry, settings)
