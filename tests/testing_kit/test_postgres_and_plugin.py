"""The kit on PostgreSQL (a fresh schema per queue, dropped at close), and the plugin's
footprint in a suite that does not use it: options, a marker and one fixture."""

from __future__ import annotations

from pathlib import Path

from jobdef.testing import open_queue

EXAMPLES = Path(__file__).resolve().parents[2] / "jobdefs"


def test_the_kit_runs_retries_on_postgresql_in_a_schema_of_its_own(
    postgres_url, monkeypatch, tmp_path
):
    import psycopg

    monkeypatch.setenv("JOBDEF_EXAMPLES_DIR", str(tmp_path))
    monkeypatch.setenv("JOBDEF_DEMO_MAIL_FAILURES", "2")
    with open_queue(EXAMPLES, db=f"{postgres_url}?schema=public", start=1.8e9) as queue:
        assert "schema=jobdef_test_" in queue.url
        schema = queue.url.rsplit("schema=", 1)[1]
        job = queue.enqueue("send_reservation_mail", {"reservation_id": 42})
        assert [a.outcome for a in queue.drain()] == ["retry", "retry", "done"]
        queue.assert_state(job.id, "done")
        queue.assert_timeline(job.id)
        # The store is on the virtual clock, not the server's.
        assert queue.attempts(job.id)[0].started_at == 1.8e9
    with psycopg.connect(postgres_url) as conn:
        found = conn.execute(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = %s", (schema,)
        ).fetchone()
    assert found == (0,)


def test_the_plugin_is_loaded_here_and_adds_only_its_options_marker_and_fixture(request):
    config = request.config
    plugin = config.pluginmanager.get_plugin("jobdef.testing.plugin")
    assert plugin is not None
    hooks = sorted(name for name in vars(plugin) if name.startswith("pytest_"))
    assert hooks == ["pytest_addoption", "pytest_configure"]
    assert config.getoption("--jobdef-db") is None
    assert any(line.startswith("jobdef(") for line in config.getini("markers"))
    # This test does not take jobdef_queue: no store was made for it.
    assert "jobdef_queue" not in request.fixturenames


def test_loading_the_plugin_imports_none_of_the_kit():
    """pytest loads the plugin in every run of a project with jobdef installed: a run that
    never takes jobdef_queue must not pay for the sheets' loader, engines or templates."""
    import json
    import subprocess
    import sys

    script = (
        "import json, sys, jobdef.testing, jobdef.testing.plugin\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('jobdef', 'yaml', "
        "'jsonschema', 'jinja2', 'sqlite3')))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(done.stdout) == ["jobdef", "jobdef.testing", "jobdef.testing.plugin"]
