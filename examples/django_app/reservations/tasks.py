"""The example's tasks. Their policy (retries, timeout, dead letter, schedule) is in
jobdefs/, one sheet per task; the code holds only what the task does."""

from datetime import timedelta

from django.core.mail import send_mail
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from jobdef import first_run
from jobdef.contrib.django import JobContext

try:  # Django 6.0
    from django.tasks import task
except ImportError:  # Django 5.2 with the django-tasks backport
    from django_tasks import task

from reservations.models import OccupancyReport, Reservation


class ReservationCancelled(Exception):
    """The guest cancelled before the mail went out: nothing to send, ever."""


@task(takes_context=True)
def send_confirmation(context: JobContext, reservation_id: int) -> None:
    reservation = Reservation.objects.get(pk=reservation_id)
    if reservation.state == "cancelled":
        raise ReservationCancelled(f"reservation {reservation_id} was cancelled")
    send_mail(
        subject=f"Your stay on {reservation.night} is confirmed",
        message=f"Reservation {reservation.pk}: see you on {reservation.night}.",
        from_email=None,
        recipient_list=[reservation.guest_email],
    )
    Reservation.objects.filter(pk=reservation_id).update(mailed_at=timezone.now())
    context.logger.info("confirmation mailed (attempt %d)", context.attempt)


@task(takes_context=True)
def nightly_occupancy(context: JobContext) -> None:
    """Count last night's confirmed reservations. The scheduler's slot (04:00 Tokyo time
    of the day it runs for) says which night, so a late or caught-up run still reports
    on its own night; writing by night makes a re-run of the same slot harmless."""
    today = context.slot.date() if context.slot else timezone.localdate()
    night = today - timedelta(days=1)
    confirmed = Reservation.objects.filter(night=night, state="confirmed").count()
    OccupancyReport.objects.update_or_create(night=night, defaults={"confirmed": confirmed})


@task(takes_context=True)
def award_stay_points(context: JobContext, reservation_id: int, points: int) -> None:
    """Credit points once per reservation: first_run() records the job's idempotency key
    in this transaction, so a re-run after a crash (the worker killed after the commit)
    finds it and changes nothing."""
    with transaction.atomic():
        if not first_run(context, connection):
            return
        Reservation.objects.filter(pk=reservation_id).update(points=F("points") + points)
