"""How a running jobdef is seen from outside: log lines, metrics, traces, health.

- :mod:`jobdef.telemetry.logs`: text or JSON log lines, for the worker and for
  the handlers' ``ctx.logger`` alike, with no secret in them;
- :mod:`jobdef.telemetry.observer`: what the worker reports of each attempt;
- :mod:`jobdef.telemetry.metrics`: Prometheus counters and gauges (optional,
  ``jobdef[metrics]``; imported only when asked for);
- :mod:`jobdef.telemetry.health`: ``/livez``, ``/readyz`` and the health file;
- :mod:`jobdef.telemetry.presence`: the worker's row in the workers table.

The worker (:mod:`jobdef.runtime.worker`) calls into this package; nothing here
imports the runtime.
"""
