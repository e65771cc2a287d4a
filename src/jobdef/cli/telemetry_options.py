"""The worker's options for being seen: logs, metrics, health (docs/operations.md)."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from jobdef.cli.options import whole_number
from jobdef.errors import UsageError
from jobdef.policy.durations import parse_duration
from jobdef.telemetry.logs import DEFAULT_LOG_LEVEL, LOG_FORMATS, LOG_LEVELS, MAX_ARGS_CHARS

if TYPE_CHECKING:
    from jobdef.telemetry.observer import WorkerTelemetry

DEFAULT_METRICS_PORT = 9464  # the port jobdef.telemetry.metrics documents
# Where the probes and the metrics listen unless told (jobdef.telemetry.http_server):
# loopback, so that only this host reaches them; a pod sets 0.0.0.0 for its kubelet.
DEFAULT_HOST = "127.0.0.1"
log = logging.getLogger("jobdef.worker")
# The gauges are read from the store at most this often, seconds.
MIN_GAUGE_INTERVAL = 1.0
# A host name to listen on: DNS labels of at most 63 characters, 253 in all.
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_NAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*\.?")


def listen_host(text: str) -> str:
    """An argparse ``type``: an IP address (an IPv6 one with or without brackets) or a
    host name, checked before anything resolves it (the resolver raises on a label too
    long or a byte that is not text, which would be a traceback)."""
    value = text.strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if _HOST_NAME.fullmatch(value):
        return value
    raise argparse.ArgumentTypeError(
        f"expected an address or a host name to listen on (127.0.0.1, 0.0.0.0, ::1), "
        f"got {text[:60]!r}"
    )


def add_telemetry_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("logs, metrics and health (docs/operations.md)")
    group.add_argument(
        "--log-level",
        default=DEFAULT_LOG_LEVEL,
        choices=LOG_LEVELS,
        help=f"the least severe lines logged (default {DEFAULT_LOG_LEVEL}: one line per "
        "finished attempt, warnings and errors; debug adds the store's and the services' "
        "details)",
    )
    group.add_argument(
        "--log-format",
        default="text",
        choices=LOG_FORMATS,
        help="text lines (default) or one JSON object per line, for the worker and the "
        "handlers' ctx.logger alike",
    )
    group.add_argument(
        "--log-args",
        action="store_true",
        help=f"add each attempt's args to its line, cut to {MAX_ARGS_CHARS} characters "
        "(default: args are never logged)",
    )
    group.add_argument(
        "--metrics-port",
        type=whole_number(0, 65535),
        metavar="PORT",
        help="serve Prometheus metrics on http://HOST:PORT/metrics (default: off; "
        f"{DEFAULT_METRICS_PORT} is the usual port; needs `pip install 'jobdef[metrics]'`)",
    )
    group.add_argument(
        "--metrics-host",
        default=DEFAULT_HOST,
        type=listen_host,
        metavar="HOST",
        help=f"the address --metrics-port listens on (default {DEFAULT_HOST}: this host "
        "only; 0.0.0.0 for every interface, as a scraper in another pod needs)",
    )
    group.add_argument(
        "--metrics-interval",
        default="15s",
        metavar="DURATION",
        help="how often the queue gauges are read from the store (default 15s, at least "
        "1s; on PostgreSQL only the worker holding maintenance reads them)",
    )
    group.add_argument(
        "--health-port",
        type=whole_number(0, 65535),
        metavar="PORT",
        help="serve /livez (the loop turned in the last minute) and /readyz (store "
        "reachable, handlers imported) on http://HOST:PORT (default: off)",
    )
    group.add_argument(
        "--health-host",
        default=DEFAULT_HOST,
        type=listen_host,
        metavar="HOST",
        help=f"the address --health-port listens on (default {DEFAULT_HOST}: this host "
        "only; 0.0.0.0 for every interface, as a kubelet's probes need)",
    )
    group.add_argument(
        "--health-file",
        metavar="PATH",
        help="touch PATH at every turn of the loop, for an exec probe (default: none)",
    )


def worker_telemetry(args: argparse.Namespace, url: str) -> WorkerTelemetry:
    """The worker's telemetry per the options, its servers started (one line on a port
    in use or a missing prometheus_client, no traceback)."""
    from jobdef.telemetry.observer import WorkerTelemetry

    interval = parse_duration(args.metrics_interval)
    if interval < MIN_GAUGE_INTERVAL:
        raise UsageError(
            f"--metrics-interval {args.metrics_interval} is too short: each read of the "
            f"gauges queries the whole store; write {MIN_GAUGE_INTERVAL:g}s or more "
            "(15s by default)"
        )
    telemetry = WorkerTelemetry(
        log_args=args.log_args, log_format=args.log_format, gauge_interval=interval
    )
    try:
        if args.metrics_port is not None:
            try:
                from jobdef.telemetry.metrics import Metrics
            except ImportError:
                raise UsageError(
                    "--metrics-port needs prometheus_client: pip install 'jobdef[metrics]'"
                ) from None
            telemetry.metrics = Metrics()
            _listen("--metrics", args.metrics_host, args.metrics_port, telemetry.metrics.serve)
        if args.health_port is not None or args.health_file:
            from jobdef.telemetry.health import Health, store_probe

            if args.health_file:
                _touch("--health-file", args.health_file)
            telemetry.health = Health(store_probe(url), health_file=args.health_file)
            if args.health_port is not None:
                _listen("--health", args.health_host, args.health_port, telemetry.health.serve)
    except BaseException:
        close_telemetry(telemetry)
        raise
    return telemetry


def _listen(option: str, host: str, port: int, serve: Callable[[int, str], int]) -> None:
    """Start one server of ``option`` (``--health``, ``--metrics``): one line when the
    address cannot be had, saying which of its two options to change."""
    try:
        bound = serve(port, host)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            raise UsageError(
                f"{option}-port {port}: cannot listen on {host} ({reason}); choose a free port"
            ) from None
        raise UsageError(
            f"{option}-host {host}: cannot listen there ({reason}); give an address of this "
            f"host ({DEFAULT_HOST} by default, 0.0.0.0 for every interface)"
        ) from None
    log.info("%s-port: listening on %s port %d", option, host, bound)


def _touch(option: str, path: str) -> None:
    try:
        Path(path).touch()
    except OSError as exc:
        raise UsageError(
            f"{option} {path}: cannot write it ({exc.strerror or exc}); give a path in a "
            "folder the worker can write to"
        ) from None


def close_telemetry(telemetry: WorkerTelemetry) -> None:
    """Stop the servers of the health probes and the metrics."""
    if telemetry.health is not None:
        telemetry.health.close()
    if telemetry.metrics is not None:
        telemetry.metrics.close()
