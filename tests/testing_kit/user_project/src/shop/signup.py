"""Sign-up: store the customer, then enqueue the welcome mail."""


def sign_up(queue, email: str) -> int:
    """``queue``: anything with jobdef's ``enqueue`` (a Queue from jobdef.connect())."""
    return queue.enqueue("send_welcome_mail", {"email": email}).id
