"""A service shipped as a container image, replayed as its team runs it.

The image is built here from the local Debian base the project makes without a registry, with
Python and confluent-kafka from Debian's and PyPI's packages, and holds ``tests/apps/
image_service.py``, written only against the contract. Each instance is a container: a crash is
``docker kill``, a freeze ``docker pause``, a restart a new container; after each run no
container of the harness is left, and one that a ``kill -9``-ed run left is removed by the next.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_replay.replay.compare import Setup
from kafka_replay.report.outcome import Outcome
from kafka_replay.waiting import wait_for

SERVICE = Path(__file__).parent / "apps" / "image_service.py"
CLIENT_VERSION = "2.16.1"  # pinned: the image's client, whatever the harness's is
#: Debian's Python; the client's wheel is fetched by this machine's pip (which knows how this
#: network reaches PyPI) and unpacked into the image, as a wheel installs.
DOCKERFILE = """\
FROM kafka-replay/debian:bookworm
RUN apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive \\
      apt-get install -y -qq --no-install-recommends python3 >/dev/null \\
 && rm -rf /var/lib/apt/lists/*
COPY wheels /tmp/wheels
RUN for wheel in /tmp/wheels/*.whl; do \\
      python3 -m zipfile -e "$wheel" /usr/local/lib/python3.11/dist-packages/; \\
    done \\
 && rm -rf /tmp/wheels
COPY image_service.py /opt/service/image_service.py
ENTRYPOINT ["python3", "-u", "/opt/service/image_service.py"]
"""
Replay = Callable[..., Outcome]


# --- the image form in a definition and on the command line: pure, no Docker ---------------


def test_an_image_in_a_definition_is_the_app_with_its_command_as_arguments(
    tmp_path: Path,
) -> None:
    from kafka_replay.definitions.definition import load_incident
    from kafka_replay.playing.run_options import RunOptions
    from kafka_replay.playing.services import app_command, app_images

    from .test_catalog_definitions import VALID, write

    text = VALID.replace(
        'command = "{{python}} -m kafka_replay_incidents.apps.batch_forwarder"',
        'image = "team/orders:1"\ncommand = "--group {group_id}"',
    )
    incident = load_incident(write(tmp_path, text))
    profile = incident.profiles["vulnerable"]
    assert (profile.app.image, profile.app.command) == ("team/orders:1", "--group {group_id}")
    spec = app_command(incident, profile, RunOptions(), {})
    assert (spec.image, spec.argv) == ("team/orders:1", ("--group", "{group_id}"))
    assert app_images(profile, RunOptions()) == {"team/orders:1"}
    assert app_images(profile, RunOptions(app="./orders")) == set()  # the user's app instead
    users = app_command(incident, profile, RunOptions(app_image="team/x:2", app="-v"), {})
    assert (users.image, users.argv) == ("team/x:2", ("-v",))
    bare = load_incident(write(tmp_path, text.replace('command = "--group {group_id}"\n', "")))
    assert app_command(bare, bare.profiles["vulnerable"], RunOptions(), {}).argv == ()


@pytest.mark.parametrize(
    ("app", "key", "problem"),
    [
        ('image = "team orders"', "app.image", "is not an image name"),
        ('image = "team/orders:1"\njvm = "{java} Orders"', "app.jvm", "brings its own Java"),
    ],
)
def test_a_wrong_image_is_named_where_it_was_written(
    tmp_path: Path, app: str, key: str, problem: str
) -> None:
    from kafka_replay.definitions.definition import load_incident
    from kafka_replay.definitions.model import DefinitionError

    from .test_catalog_definitions import VALID, write

    text = VALID.replace(
        'command = "{{python}} -m kafka_replay_incidents.apps.batch_forwarder"', app
    )
    with pytest.raises(DefinitionError) as caught:
        load_incident(write(tmp_path, text))
    assert key in str(caught.value) and problem in str(caught.value)


def test_an_image_option_that_is_no_image_is_refused() -> None:
    from kafka_replay.replay.settings import RunSettings

    with pytest.raises(ValueError, match="--app-image 'team orders' is not an image name"):
        RunSettings({"app_image": "team orders"})


# --- the image run for real ------------------------------------------------------------------


def _docker_or_skip() -> object:
    from kafka_replay.servers.docker import DockerUnavailable, docker_client

    try:
        return docker_client()
    except DockerUnavailable as exc:
        pytest.skip(f"an image app needs Docker: {exc}")


@pytest.fixture(scope="session")
def service_image() -> str:
    """``kafka-replay-test/service:<digest of what it holds>``, built once per machine."""
    from kafka_replay.servers.docker import build_lock, debian_base, docker_build, image_exists

    client = _docker_or_skip()
    made_of = DOCKERFILE + CLIENT_VERSION + SERVICE.read_text()
    digest = hashlib.sha256(made_of.encode()).hexdigest()[:12]
    tag = f"kafka-replay-test/service:{digest}"
    with build_lock():
        if not image_exists(client, tag):
            try:
                debian_base(client, print)
            except Exception as exc:  # no debootstrap here: the base cannot be made
                pytest.skip(f"the local Debian base image cannot be made here: {exc}")
            with tempfile.TemporaryDirectory(prefix="kafka-replay-test-image-") as context:
                (Path(context) / "Dockerfile").write_text(DOCKERFILE)
                _client_wheel(Path(context) / "wheels")
                (Path(context) / "image_service.py").write_bytes(SERVICE.read_bytes())
                docker_build(client, Path(context), tag, {"kafka-replay.image": "test-service"})
    return tag


def _client_wheel(into: Path) -> None:
    """confluent-kafka's wheel for Debian bookworm's CPython 3.11, from PyPI (or pip's cache)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
         "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64",
         "--platform", "manylinux_2_17_x86_64",
         "--dest", str(into), f"confluent-kafka=={CLIENT_VERSION}"],
        check=True, timeout=300,
    )  # fmt: skip


def started_containers(run_dir: Path) -> list[str]:
    """The ids of the containers a run started, from its lifecycle events."""
    found = []
    for path in Path(run_dir).rglob("lifecycle.jsonl"):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            if event.get("kind") == "start" and "container" in event:
                found.append(event["container"])
    return found


def still_there(containers: list[str]) -> list[str]:
    """Those of ``containers`` that exist, running or not (tests beside this one have theirs)."""
    import docker

    client = docker.from_env()
    there = []
    for container in containers:
        try:
            client.api.inspect_container(container)
        except docker.errors.NotFound:
            continue
        there.append(container[:12])
    return there


def no_container_left(outcome: Outcome) -> None:
    started = started_containers(Path(outcome.run_dir))
    assert started, "the run started no container"
    assert still_there(started) == []


@pytest.mark.parametrize(
    "backend", [pytest.param("embedded", marks=pytest.mark.matrix), "container"]
)
def test_an_image_that_writes_outside_its_transaction_is_found_repeating_when_killed(
    replay_incident: Replay, service_image: str, backend: str
) -> None:
    outcome = replay_incident(
        "crash-restart-eos", "vulnerable", setup=Setup(backend, backend=backend),
        app_image=service_image, app="--work-ms 8",
    )  # fmt: skip
    print(outcome.explain())
    no_container_left(outcome)
    assert outcome.app == service_image
    assert (outcome.reproduced, outcome.result) == (True, "vulnerable"), outcome.explain()
    assert outcome.symptoms["kills"] >= 5 and outcome.symptoms["app_restarts"] >= 5
    lifecycle = (Path(outcome.run_dir) / "logs" / "app-0.log").read_text()
    assert lifecycle.count("image_service: reading") >= 6  # a new container after each kill


@pytest.mark.parametrize(
    "backend", ["embedded", pytest.param("container", marks=pytest.mark.matrix)]
)
def test_an_exactly_once_image_killed_at_random_keeps_its_guarantee(
    replay_incident: Replay, service_image: str, backend: str
) -> None:
    outcome = replay_incident(
        "crash-restart-eos", "remediated", setup=Setup(backend, backend=backend),
        app_image=service_image, app="--transactional", guarantee="exactly-once",
    )  # fmt: skip
    print(outcome.explain())
    no_container_left(outcome)
    assert outcome.passed and outcome.verdict == "exactly-once", outcome.explain()
    assert outcome.symptoms["kills"] >= 5


@pytest.mark.matrix  # a producer's fault: CI keeps the Java service's (test_any_app.py)
def test_an_image_whose_sends_expire_under_a_paused_leader_is_found_losing(
    replay_incident: Replay, service_image: str
) -> None:
    outcome = replay_incident(
        "paused-leader-send-expiry", "vulnerable", app_image=service_image,
        app="--delivery-timeout-ms 3000", guarantee="at-least-once",
    )  # fmt: skip
    print(outcome.explain())
    no_container_left(outcome)
    assert (outcome.reproduced, outcome.result) == (True, "vulnerable"), outcome.explain()
    assert outcome.symptoms["inputs_lost"] >= 1


def test_two_containers_sharing_one_static_id_are_fenced_and_restarted(
    replay_incident: Replay, service_image: str
) -> None:
    outcome = replay_incident(
        "static-member-bounce", "vulnerable", app_image=service_image, guarantee="at-least-once"
    )
    print(outcome.explain())
    no_container_left(outcome)
    assert (outcome.reproduced, outcome.result) == (True, "vulnerable"), outcome.explain()
    assert outcome.symptoms["static_members_fenced"] >= 1
    assert outcome.symptoms["app_restarts"] >= 1
    # the container saw its fencing: reported by a poll or raised by a commit, whichever came
    # first (the client logs the fatal error either way)
    logs = Path(outcome.run_dir) / "logs"
    output = "".join(p.read_text() for p in logs.glob("app-*.log"))
    assert "Static consumer fenced by other consumer with same group.instance.id" in output


def test_a_missing_image_is_one_error_line_before_any_broker_starts(tmp_path: Path) -> None:
    _docker_or_skip()
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "kafka_replay.cli", "run", "crash-restart-eos",
         "--app-image", "kafka-replay-test/absent:0", "--report", str(tmp_path / "report")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2, result.stderr
    assert len(errors) == 1 and "kafka-replay-test/absent:0" in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "report").exists()  # nothing ran
    print(f"refused in {time.monotonic() - started:.1f}s")


def _run_until_its_app_starts(report: Path, image: str, stop: signal.Signals) -> list[str]:
    """Start ``kafka-replay run`` with the image app, send it ``stop`` once a container of its
    app started, wait for it to end; the containers it started."""
    child = subprocess.Popen(
        [sys.executable, "-m", "kafka_replay.cli", "run", "crash-restart-eos",
         "--profile", "remediated", "--app-image", image, "--app=--transactional",
         "--report", str(report)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip

    def started() -> bool:
        if started_containers(report):
            return True
        assert child.poll() is None, "the run ended before its app started"
        return False

    message = "no app container started within 240 s"
    try:
        wait_for(started, 240, message, every_s=0.2, error=AssertionError)
    finally:
        os.kill(child.pid, stop)
        child.wait(timeout=120)
    return started_containers(report)


def test_ctrl_c_stops_the_run_and_removes_its_containers(
    tmp_path: Path, service_image: str
) -> None:
    started = _run_until_its_app_starts(tmp_path / "report", service_image, signal.SIGINT)
    assert still_there(started) == []


def test_containers_of_a_killed_run_are_removed_by_the_next(
    tmp_path: Path, service_image: str
) -> None:
    """``kill -9`` of ``kafka-replay run`` cannot stop its containers (the daemon's children);
    their lease names them, and the next run removes them before it starts anything."""
    started = _run_until_its_app_starts(tmp_path / "report", service_image, signal.SIGKILL)
    assert still_there(started), "the killed run's containers are there until the next run"
    from kafka_replay.servers.reaper import reap_orphans

    reap_orphans()  # what every run does first
    assert still_there(started) == []


def test_the_supervisors_verbs_act_on_the_container(tmp_path: Path, service_image: str) -> None:
    """A freeze pauses the container, a crash kills it (seen as SIGKILL), a restart is a new
    container, a stop ends it with SIGTERM; every exit is recorded, and none is left."""
    from kafka_replay.apps import AppContext, AppSpec, RestartPolicy, Supervisor
    from kafka_replay.servers.docker import docker_client

    events: list[dict[str, object]] = []
    context = AppContext("127.0.0.1:9", "in", "out", "group", instance=0)
    supervisor = Supervisor(
        AppSpec.parse("", image=service_image), lambda i: context, tmp_path, events.append,
        RestartPolicy(delay_s=0.2, startup_s=1.0),
    )  # fmt: skip
    client = docker_client()

    def state() -> dict[str, object]:
        """The state of this supervisor's container (others may run beside it)."""
        pid = [e for e in events if e["kind"] == "start"][-1]["pid"]
        for found in client.api.containers(all=True, filters={"label": "kafka-replay.role=app"}):
            container = client.api.inspect_container(found["Id"])
            if container["State"]["Pid"] == pid:
                return container["State"]
        raise AssertionError(f"no container runs pid {pid}")

    def services_reading() -> int:
        return (tmp_path / "app-0.log").read_text().count("image_service: reading")

    with supervisor.start(1):
        # its SIGTERM handler is set (PID 1 ignores it before)
        wait_for(lambda: services_reading() >= 1, 60, lambda: str(events), error=AssertionError)
        supervisor.signal(0, signal.SIGSTOP)
        assert state()["Paused"] is True
        supervisor.signal(0, signal.SIGCONT)
        assert state()["Paused"] is False
        first = next(e for e in events if e["kind"] == "start")["pid"]
        supervisor.signal(0, signal.SIGKILL)
        # until the new container runs its service
        wait_for(lambda: services_reading() >= 2, 60, lambda: str(events), error=AssertionError)
    exits = [e for e in events if e["kind"] == "exit"]
    assert [(e["signal"], e["expected"]) for e in exits] == [("SIGKILL", False), (None, True)]
    starts = [e for e in events if e["kind"] == "start"]
    assert starts[1]["pid"] != first and starts[1]["image"] == service_image
    assert "image_service: reading in as group" in (tmp_path / "app-0.log").read_text()
    assert still_there([e["container"] for e in starts]) == []
