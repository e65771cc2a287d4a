"""Against DNS rebinding and forged posts: the Host allow-list, the origin of a POST
and a CSRF token bound to the caller, over HTTP to a real uvicorn server (and to a
real ``jobdef dashboard`` process)."""

from __future__ import annotations

import subprocess
import urllib.parse

import pytest
from dashboard_process import dashboard_command, dashboard_env, dashboard_process
from dashboard_steps import SHEETS, Client, make_dead
from test_dashboard_security import basic

from jobdef.backends.records import ErrorInfo
from jobdef.dashboard import Auth, create_app
from jobdef.errors import UsageError

CONNECTION = ErrorInfo("ConnectionError", "carrier timed out", "")
PAGES = ("/", "/jobs", "/api/jobs", "/dead", "/static/dashboard.js", "/events", "/metrics")


def _port(url: str) -> int:
    return int(urllib.parse.urlsplit(url).port or 0)


def _one_line_with_the_headers(status: int, headers: dict[str, str], body: str) -> None:
    names = {name.lower() for name in headers}
    assert {"content-security-policy", "x-frame-options", "x-content-type-options"} <= names
    assert body.endswith("\n")
    assert "\n" not in body[:-1], body
    assert "Traceback" not in body


@pytest.fixture
def dead_job(sqlite_url, registry):
    from jobdef.backends import open_backend
    from jobdef.runtime.queue import connect

    backend = open_backend(sqlite_url)
    queue = connect(sqlite_url, registry)
    try:
        [job_id] = make_dead(backend, queue, "ship_order", [{"order_id": 424242}], CONNECTION)
        yield backend, job_id
    finally:
        queue.close()
        backend.close()


def test_a_rebound_name_reads_nothing_and_changes_nothing(sqlite_url, serve, dead_job):
    """A page at http://rebind.attacker.example:PORT whose name now resolves to
    127.0.0.1 sends that name as Host: every path answers one line naming the fix,
    with the security headers, and no job is shown or moved."""
    backend, job_id = dead_job
    served = serve(create_app(sqlite_url, SHEETS))
    port = _port(served.url)
    foreign = Client(served.url, {"Host": f"rebind.attacker.example:{port}"})
    token = Client(served.url).csrf()
    for path in (*PAGES, f"/jobs/{job_id}", f"/api/jobs/{job_id}"):
        status, headers, body = foreign.request(path)
        assert status == 400, path
        assert body == (
            "host 'rebind.attacker.example' is not one this dashboard serves; if it is its "
            "name, start it with --allowed-host rebind.attacker.example "
            "(allowed_hosts= of create_app)\n"
        )
        _one_line_with_the_headers(status, headers, body)
    form = [("action", "requeue"), ("ids", str(job_id)), ("confirm", "yes"), ("csrf", token)]
    assert foreign.request("/actions/jobs", form)[0] == 400
    assert backend.get(job_id).state == "dead"
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "localhost"):
        status, _, body = Client(served.url, {"Host": host}).request("/api/jobs")
        assert status == 200, host
        assert "424242" in body
    for host in (
        "127.0.0.1.nip.io",
        "localhost.attacker.example",
        "0.0.0.0",
        "",
        f"localhost:{port}@rebind.attacker.example",
        "[::1]rebind.attacker.example",
        f"localhost:{port}x",
    ):
        assert Client(served.url, {"Host": host}).request("/api/jobs")[0] == 400, host


def test_a_foreign_host_is_refused_before_the_credentials_are_asked(sqlite_url, serve):
    auth = Auth(token="tok-" + "x" * 30)
    served = serve(create_app(sqlite_url, SHEETS, auth))
    bearer = {"Authorization": "Bearer tok-" + "x" * 30}
    status, headers, _ = Client(served.url, {**bearer, "Host": "evil.example"}).request("/")
    assert status == 400
    assert "www-authenticate" not in {name.lower() for name in headers}
    assert Client(served.url, bearer).request("/")[0] == 200


def test_allowed_hosts_add_names_and_domains(sqlite_url, serve):
    served = serve(create_app(sqlite_url, SHEETS, allowed_hosts=["Jobs.Example.com", ".corp.test"]))
    for host, status in (
        ("jobs.example.com", 200),
        ("JOBS.example.com:8484", 200),
        ("corp.test", 200),
        ("dash.corp.test:443", 200),
        ("example.com", 400),
        ("corp.test.evil.example", 400),
        ("xcorp.test", 400),
    ):
        assert Client(served.url, {"Host": host}).request("/api/overview")[0] == status, host
    for bad in ("http://jobs.example.com", "jobs.example.com/admin", "", "a b"):
        with pytest.raises(UsageError, match="write a host name as the Host header sends it"):
            create_app(sqlite_url, SHEETS, allowed_hosts=[bad])


def test_a_post_from_another_origin_is_refused_though_it_carries_the_token(
    sqlite_url, serve, dead_job
):
    """The token alone is not enough: Origin (else Referer, else Sec-Fetch-Site) must
    name the host the form was sent to, port included."""
    backend, job_id = dead_job
    served = serve(create_app(sqlite_url, SHEETS))
    port = _port(served.url)
    token = Client(served.url).csrf()
    form = [("action", "requeue"), ("ids", str(job_id)), ("confirm", "yes"), ("csrf", token)]
    for headers in (
        {"Origin": f"http://127.0.0.1:{port + 1}"},
        {"Origin": f"http://localhost:{port}"},  # another origin, though the same machine
        {"Origin": "null"},
        {"Referer": f"http://127.0.0.1:{port + 1}/attack.html"},
        {"Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "cross-site"},
    ):
        status, answer, body = Client(served.url, headers).request("/actions/jobs", form)
        assert status == 403, headers
        assert body.startswith("the form was posted from another site"), body
        assert body.endswith("; post it from this dashboard's pages\n")
        _one_line_with_the_headers(status, answer, body)
    assert backend.get(job_id).state == "dead"
    own = {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"}
    status, _, body = Client(served.url, own).request("/actions/jobs", form)
    assert status == 200
    assert "requeue: 1 of 1 changed" in body
    assert backend.get(job_id).state == "queued"


def test_the_csrf_token_is_bound_to_the_caller_and_no_cookie_holds_it(sqlite_url, serve, dead_job):
    """Each identity has its own token, another process (a restart) another one, and a
    page sets no cookie: there is nothing a foreign page can plant or evict."""
    backend, job_id = dead_job
    auth = Auth(user="ops", password="right horse battery", token="tok-" + "x" * 30)
    served = serve(create_app(sqlite_url, SHEETS, auth))
    ops = Client(served.url, basic("ops", "right horse battery"))
    bearer = Client(served.url, {"Authorization": "Bearer tok-" + "x" * 30})
    status, headers, _ = ops.request("/jobs")
    assert status == 200
    assert "set-cookie" not in {name.lower() for name in headers}
    ops_token, bearer_token = ops.csrf(), bearer.csrf()
    assert ops_token != bearer_token
    form = [("action", "requeue"), ("ids", str(job_id)), ("confirm", "yes")]
    for client, token in ((bearer, ops_token), (ops, bearer_token)):
        status, _, body = client.request("/actions/jobs", [*form, ("csrf", token)])
        assert status == 403
        assert "CSRF token is missing or does not match" in body
    restarted = serve(create_app(sqlite_url, SHEETS, auth))
    again = Client(restarted.url, basic("ops", "right horse battery"))
    assert again.request("/actions/jobs", [*form, ("csrf", ops_token)])[0] == 403
    assert backend.get(job_id).state == "dead"
    # A cookie named as the old double-submit one changes nothing either way.
    planted = Client(served.url, {**ops.headers, "Cookie": "jobdef_csrf=planted"})
    assert planted.request("/actions/jobs", [*form, ("csrf", "planted")])[0] == 403
    status, _, body = planted.request("/actions/jobs", [*form, ("csrf", ops_token)])
    assert (status, "requeue: 1 of 1 changed" in body) == (200, True)
    # Replicas behind one name share a configured secret: a form of one posts to another.
    shared = "s" * 32
    one, two = (serve(create_app(sqlite_url, SHEETS, auth, secret=shared)) for _ in range(2))
    token = Client(one.url, ops.headers).csrf()
    status, _, body = Client(two.url, ops.headers).request(
        "/actions/jobs", [*form, ("csrf", token)]
    )
    assert (status, "requeue: 0 of 1 changed" in body) == (200, True)
    with pytest.raises(UsageError, match="use at least 16 random ones"):
        create_app(sqlite_url, SHEETS, secret="short")


@pytest.mark.slow
def test_jobdef_dashboard_answers_its_allowed_hosts_only(sqlite_url, tmp_path):
    """The real command: --allowed-host adds a name and a domain, a foreign Host is told
    which option to add; a value that names no host is one line before anything starts."""
    refused = subprocess.run(
        [*dashboard_command(sqlite_url), "--allowed-host", "https://jobs.example.com/"],
        env=dashboard_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert refused.returncode == 2
    assert refused.stderr.startswith(
        "jobdef dashboard: error: allowed host 'https://jobs.example.com/': write a host name"
    )
    assert len(refused.stderr.strip().splitlines()) == 1
    options = ("--allowed-host", "jobs.example.com", "--allowed-host", ".corp.test")
    with dashboard_process(sqlite_url, tmp_path, *options) as url:
        port = _port(url)
        for host in ("jobs.example.com", f"jobs.example.com:{port}", "a.corp.test", "127.0.0.1"):
            assert Client(url, {"Host": host}).request("/api/overview")[0] == 200, host
        status, _, body = Client(url, {"Host": f"evil.example:{port}"}).request("/api/overview")
        assert status == 400
        assert "start it with --allowed-host evil.example" in body
