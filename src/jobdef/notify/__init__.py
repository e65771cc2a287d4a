"""Notifications: events of a job's life, written to an outbox, delivered through channels."""
