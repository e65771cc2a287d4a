"""Adapters that make a job sheet the policy of another runtime: Celery, RQ."""
