"""Tasks whose sheets they contradict, for the check tests (imported by them only)."""

from jobdef.contrib.django.compat import PACKAGE

task = __import__(PACKAGE, fromlist=["task"]).task


@task(queue_name="bulk")
def bulk_mail(reservation_id: int) -> None:
    pass


@task()
def misfit(item: int) -> None:
    pass
