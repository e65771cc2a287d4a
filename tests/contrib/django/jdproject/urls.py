from django.contrib import admin
from django.urls import include, path

from jobdef.contrib.django.receipts import receipt_urls

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include(receipt_urls(look_seconds=0.1))),
    path("api-pg/", include(receipt_urls(backend="pg", look_seconds=0.1))),
    path("cors/", include(receipt_urls(allow_origins="https://shop.example"))),
]
