from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_POST

from reservations.models import Reservation
from reservations.tasks import award_stay_points, send_confirmation


@require_POST
def confirm(request: HttpRequest, reservation_id: int) -> HttpResponse:
    """Confirm a reservation and queue its mail in the same transaction: if the
    confirmation rolls back, no mail is ever sent; if it commits, the mail job exists."""
    with transaction.atomic():
        reservation = get_object_or_404(Reservation.objects.select_for_update(), pk=reservation_id)
        reservation.state = "confirmed"
        reservation.save(update_fields=["state"])
        result = send_confirmation.enqueue(reservation_id=reservation.pk)
        award_stay_points.enqueue(reservation_id=reservation.pk, points=100)
    return HttpResponse(f"confirmed; mail job {result.id}\n")
