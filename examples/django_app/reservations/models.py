from django.db import models


class Reservation(models.Model):
    guest_email = models.EmailField()
    night = models.DateField()
    state = models.CharField(max_length=20, default="pending")
    mailed_at = models.DateTimeField(null=True, blank=True)
    points = models.IntegerField(default=0)

    def __str__(self) -> str:
        return f"reservation {self.pk} for {self.night} ({self.state})"


class OccupancyReport(models.Model):
    """One row per night, written by the nightly batch."""

    night = models.DateField(unique=True)
    confirmed = models.IntegerField()
