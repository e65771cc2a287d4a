from django.contrib import admin

from reservations.models import OccupancyReport, Reservation

admin.site.register(Reservation)
admin.site.register(OccupancyReport)
