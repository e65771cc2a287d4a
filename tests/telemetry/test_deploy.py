"""The deployment recipes of deploy/: their numbers agree with the worker's, they pass
their own tools' checks, and the image's entry point runs as a real worker."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from jobdef.cli import build_parser
from jobdef.policy.durations import parse_duration
from jobdef.runtime.queue import Queue

ROOT = Path(__file__).resolve().parent.parent.parent
DEPLOY = ROOT / "deploy"
HERE = Path(__file__).resolve().parent


def worker_options(argv: list[str]) -> dict[str, object]:
    """``jobdef worker`` options as the real parser reads ``argv`` (defaults included)."""
    return vars(build_parser("worker").parse_args(["worker", *argv]))


def unit() -> dict[str, str]:
    """The systemd unit's keys (each appears once in it)."""
    found = {}
    for line in (DEPLOY / "systemd" / "jobdef-worker.service").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            assert key not in found, key
            found[key] = value
    return found


def dockerfile_json(instruction: str) -> list[str]:
    text = (DEPLOY / "docker" / "Dockerfile").read_text()
    [line] = [line for line in text.splitlines() if line.startswith(instruction + " ")]
    value: list[str] = json.loads(line.removeprefix(instruction + " "))
    return value


def test_systemd_waits_longer_than_the_grace_and_sends_sigterm_to_the_worker() -> None:
    keys = unit()
    command = keys["ExecStart"].split()
    assert command[1] == "worker"
    grace = parse_duration(str(worker_options(command[2:])["grace"]))
    assert keys["KillSignal"] == "SIGTERM"
    assert keys["KillMode"] == "mixed"  # the handler processes are the worker's to stop
    assert parse_duration(keys["TimeoutStopSec"]) >= grace + 10
    # On a host, the probes and metrics are for that host only unless the unit says.
    options = worker_options(command[2:])
    assert (options["health_host"], options["metrics_host"]) == ("127.0.0.1", "127.0.0.1")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_systemd_analyze_verifies_the_unit(tmp_path: Path) -> None:
    # Pointed at this machine's jobdef: verify checks that the command exists.
    jobdef = shutil.which("jobdef") or sys.executable
    text = (DEPLOY / "systemd" / "jobdef-worker.service").read_text()
    copy = tmp_path / "jobdef-worker.service"
    copy.write_text(text.replace("/srv/app/venv/bin/jobdef", jobdef))
    ran = subprocess.run(
        ["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, check=False
    )
    assert ran.returncode == 0, ran.stderr


def test_kubernetes_waits_longer_than_the_grace_and_probes_the_health_port() -> None:
    deployment, budget = yaml.safe_load_all((DEPLOY / "kubernetes" / "worker.yaml").read_text())
    assert (deployment["kind"], budget["kind"]) == ("Deployment", "PodDisruptionBudget")
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    options = worker_options([str(arg) for arg in container["args"]])
    assert pod["terminationGracePeriodSeconds"] >= parse_duration(str(options["grace"])) + 10
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports == {"health": options["health_port"], "metrics": options["metrics_port"]}
    # The kubelet and Prometheus reach the pod's address, not its loopback.
    assert (options["health_host"], options["metrics_host"]) == ("0.0.0.0", "0.0.0.0")
    assert container["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert budget["spec"]["selector"]["matchLabels"] == labels
    assert budget["spec"]["maxUnavailable"] == 1
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_the_kubernetes_manifests_are_valid_objects() -> None:
    validate = pytest.importorskip("kubernetes_validate")
    for document in yaml.safe_load_all((DEPLOY / "kubernetes" / "worker.yaml").read_text()):
        validate.validate(document, validate.latest_version(), strict=True)


def test_the_dockerfile_runs_the_worker_as_a_user_with_a_healthcheck() -> None:
    text = (DEPLOY / "docker" / "Dockerfile").read_text()
    assert dockerfile_json("ENTRYPOINT") == ["jobdef", "worker"]
    options = worker_options(dockerfile_json("CMD"))
    [user] = re.findall(r"^USER (\S+)$", text, re.MULTILINE)
    assert not user.startswith(("root", "0:", "0"))
    assert "STOPSIGNAL SIGTERM" in text
    [check] = [line for line in text.splitlines() if line.lstrip().startswith('CMD ["python"')]
    assert f"127.0.0.1:{options['health_port']}/livez" in check
    # The HEALTHCHECK runs in the container: the probes stay on its loopback, and only
    # the metrics, scraped from outside, are exposed.
    assert options["health_host"] == "127.0.0.1"
    assert options["metrics_host"] == "0.0.0.0"
    [exposed] = re.findall(r"^EXPOSE (.+)$", text, re.MULTILINE)
    assert exposed.split() == [str(options["metrics_port"])]


@pytest.mark.skipif(shutil.which("hadolint") is None, reason="hadolint is not installed")
def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    ran = subprocess.run(
        ["hadolint", str(DEPLOY / "docker" / "Dockerfile")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr


@pytest.mark.slow
def test_the_image_entry_point_runs_a_worker(queue: Queue, db_url: str, tmp_path: Path) -> None:
    """ENTRYPOINT + CMD as the image runs them, in the folder the image copies the app to
    (here the telemetry tests' sheets as ``jobdefs``), with --burst so it ends, and its
    ports at 0 so the test does not collide with anything listening on the host."""
    shutil.copytree(HERE / "sheets", tmp_path / "jobdefs")
    job = queue.enqueue("quick", {"i": 1}).id
    argv = dockerfile_json("ENTRYPOINT") + dockerfile_json("CMD")
    argv = ["0" if argv[i - 1].endswith("-port") else arg for i, arg in enumerate(argv)]
    env = os.environ | {
        "JOBDEF_DATABASE_URL": db_url,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT / "src")]),
    }
    ran = subprocess.run(
        [sys.executable, "-m", "jobdef", *argv[1:], "--burst"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    lines = [json.loads(line) for line in ran.stderr.splitlines()]
    assert any(line["job_id"] == job and line["outcome"] == "done" for line in lines)
    assert queue.get(job).state == "done"  # type: ignore[union-attr]
