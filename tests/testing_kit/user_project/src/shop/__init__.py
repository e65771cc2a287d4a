"""A shop whose sign-up sends a welcome mail through a job."""
