from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies: list[tuple[str, str]] = []  # noqa: RUF012  # Django's own layout
    operations = [  # noqa: RUF012
        migrations.CreateModel(
            name="Points",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("order_id", models.IntegerField()),
                ("points", models.IntegerField()),
            ],
        )
    ]
