"""Errors that the example sheets list as fatal."""

from __future__ import annotations


class InvalidAddress(ValueError):
    """The recipient address cannot receive mail; retrying will not help."""


class Cancelled(Exception):
    """The reservation was cancelled before the mail went out."""


class BadImage(ValueError):
    """The upload is not an image that can be decoded."""


class MemberClosed(Exception):
    """The member closed their account; points cannot be awarded."""


class CardDeclined(Exception):
    """The card issuer declined the charge; retrying will not change its answer."""
