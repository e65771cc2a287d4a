from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies: list[tuple[str, str]] = []  # noqa: RUF012  # Django's own layout
    operations = [  # noqa: RUF012
        migrations.CreateModel(
            name="Reservation",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("guest_email", models.EmailField(max_length=254)),
                ("night", models.DateField()),
                ("state", models.CharField(default="pending", max_length=20)),
                ("mailed_at", models.DateTimeField(blank=True, null=True)),
                ("points", models.IntegerField(default=0)),
            ],
        ),
        migrations.CreateModel(
            name="OccupancyReport",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("night", models.DateField(unique=True)),
                ("confirmed", models.IntegerField()),
            ],
        ),
    ]
