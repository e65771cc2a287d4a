from django.contrib import admin
from django.urls import path
from reservations import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("reservations/<int:reservation_id>/confirm", views.confirm, name="confirm"),
]
