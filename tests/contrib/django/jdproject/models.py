from django.db import models


class Points(models.Model):
    """A side effect a job must make once: points awarded for an order."""

    order_id = models.IntegerField()
    points = models.IntegerField()
