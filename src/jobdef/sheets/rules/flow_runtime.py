"""A flow's steps on jobdef's worker (JD372): a step's job run by Celery or RQ.

A flow runs only on jobdef's runtime: ``jobdef start`` stores its steps in jobdef's
queue, and jobdef's worker runs each when its parents have ended. A job that RQ runs
(it names ``runtime.rq``) or whose handler is a Celery task is left to that runtime:
jobdef's worker refuses to serve its queue, so the step would wait forever. RQ is
read from the sheet; a Celery task is seen only by importing it (--check-imports).
"""

from __future__ import annotations

from collections.abc import Iterator

from jobdef.sheets.diagnostics import Diagnostic
from jobdef.sheets.rules.base import Rule
from jobdef.sheets.rules.context import Context
from jobdef.sheets.rules.workflows import at

STEP_ON_OTHER_RUNTIME = Rule(
    "JD372",
    "workflow-step-on-other-runtime",
    "error",
    "A flow's steps run only on jobdef's worker, which leaves a job run by RQ (runtime.rq) "
    "or a Celery task (--check-imports) to that runtime: such a step would never run.",
)
RULES = (STEP_ON_OTHER_RUNTIME,)


def check(context: Context) -> Iterator[Diagnostic]:
    jobs = {policy.name: policy for _, policy in context.jobs}
    celery: set[str] = set()
    if context.check_imports:
        from jobdef.sheets.rules.imports import Request, probe

        wanted = {name: Request.of(policy) for name, policy in jobs.items()}
        answers = probe(wanted.values())  # the handler rule's answers, already found
        celery = {name for name, r in wanted.items() if answers[r].caller == "celery"}
    for doc, flow in context.workflows:
        for step in flow.steps.values():
            policy = jobs.get(step.job)
            if policy is None:
                continue  # an unknown job is JD351's
            if step.job in celery:
                who = f"its handler {policy.handler} is a Celery task, which a Celery worker runs"
            elif policy.runtime.rq.named:
                who = "it names runtime.rq, so RQ runs it"
            else:
                continue
            path = ("finally", "job") if step.is_finally else ("steps", step.name, "job")
            yield STEP_ON_OTHER_RUNTIME.at_origin(
                at(doc, path),
                f"step {step.name!r} of workflow {flow.name!r} runs job {step.job!r}, but "
                f"{who}, and a flow's steps run only on jobdef's worker; give the step a "
                "job whose handler jobdef's worker calls, handler(ctx, **args) (the same "
                "code, its own sheet)",
            )
