"""The mail relay (a list, in this example) and the job that sends the welcome mail."""

SENT: list[str] = []


class Bounced(Exception):
    """The address does not exist."""


def relay(email: str) -> None:
    if email.endswith("@invalid"):
        raise Bounced(email)
    SENT.append(email)


def send_welcome_mail(ctx, email: str) -> None:
    relay(email)
