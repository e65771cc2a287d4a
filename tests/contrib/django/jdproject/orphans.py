"""A task that no sheet runs: `manage.py check` must say which sheet to write."""

from jobdef.contrib.django.compat import PACKAGE

task = __import__(PACKAGE, fromlist=["task"]).task


@task()
def rebuild_search_index(shard: int) -> None:
    pass
