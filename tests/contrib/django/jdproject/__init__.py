"""A small real Django project that the jobdef.contrib.django tests run against."""
