"""The shop's own tests, through the jobdef_queue fixture of jobdef's pytest plugin."""

from shop import mail
from shop.signup import sign_up


def test_sign_up_enqueues_the_welcome_mail(jobdef_queue):
    sign_up(jobdef_queue, "ann@example.com")
    jobdef_queue.assert_enqueued("send_welcome_mail", {"email": "ann@example.com"})
    jobdef_queue.assert_not_enqueued("send_welcome_mail", {"email": "bob@example.com"})


def test_the_welcome_mail_is_sent(jobdef_queue):
    job_id = sign_up(jobdef_queue, "ann@example.com")
    jobdef_queue.drain()
    jobdef_queue.assert_state(job_id, "done")
    assert mail.SENT[-1] == "ann@example.com"


def test_a_relay_that_stays_down_gives_up_after_three_attempts(jobdef_queue, monkeypatch):
    def down(email):
        raise ConnectionError("relay down")

    monkeypatch.setattr(mail, "relay", down)
    job_id = sign_up(jobdef_queue, "ann@example.com")
    jobdef_queue.drain()
    jobdef_queue.assert_state(job_id, "dead")
    assert [a.offset for a in jobdef_queue.attempts(job_id)] == [0.0, 60.0, 180.0]
    jobdef_queue.assert_timeline(job_id)
    jobdef_queue.assert_notified("ops", "dead", job="send_welcome_mail", count=1)


def test_a_bounce_is_not_retried(jobdef_queue):
    job_id = sign_up(jobdef_queue, "nobody@invalid")
    [attempt] = jobdef_queue.drain()
    assert attempt.error.type == "shop.mail.Bounced"
    jobdef_queue.assert_state(job_id, "dead")
