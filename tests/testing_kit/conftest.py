"""The testing kit's tests. ``user_project`` is an application with tests of its own, run
by test_user_project.py in a pytest of its own, never collected by this suite."""

collect_ignore = ["user_project"]
