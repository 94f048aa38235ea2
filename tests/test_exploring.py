"""The exploration's pure parts: drawing (the same seed, the same schedules; every drawn
schedule a valid definition), shrinking on made-up failures, and what counts as broken."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from kafka_replay.cli_explore import parse_budget
from kafka_replay.definitions.definition import load_incident
from kafka_replay.exploring import explorer as explorer_module
from kafka_replay.exploring.explorer import KINDS, ExploreError, Explorer, kinds_of
from kafka_replay.exploring.families import FAMILIES, choose_families
from kafka_replay.exploring.findings import html_page, write_report
from kafka_replay.exploring.schedule import Fault, definition_text, draw, simpler_faults
from kafka_replay.exploring.shape import read_shape
from kafka_replay.exploring.shrinking import shrink
from kafka_replay.exploring.windows import COMMIT_AHEAD, Window
from kafka_replay.report.outcome import Outcome

APP = "{python} -m tests.apps.flawed commit-first"


def test_the_same_seed_draws_the_same_schedules() -> None:
    families = choose_families(None)
    first = [draw(11, i, families) for i in range(40)]
    assert first == [draw(11, i, families) for i in range(40)]
    assert first != [draw(12, i, families) for i in range(40)]
    assert {f.family for s in first for f in s.faults} == {f.name for f in families}
    assert "retention" in FAMILIES and "retention" not in {f.name for f in families}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_drawn_schedule_is_a_definition_the_engine_reads(family: str, tmp_path: Path) -> None:
    for index in range(15):
        for guarantee in ("at-least-once", "exactly-once"):
            transactional = guarantee == "exactly-once"
            schedule = draw(3, index, choose_families(family), transactional=transactional)
            path = tmp_path / f"{schedule.name}.toml"
            path.write_text(definition_text(schedule, APP, guarantee, dict([KINDS["lost"]])))
            incident = load_incident(path)
            assert incident.name == schedule.name
            fault_steps = [s for f in schedule.faults for s in f.steps]
            assert len(incident.steps) == 6 + len(schedule.faults) + len(fault_steps)


def test_partitions_grow_at_every_drawn_increase() -> None:
    for index in range(40):
        schedule = draw(9, index, choose_families("partitions"))
        counts = [s["count"] for f in schedule.faults for s in f.steps]
        assert counts == sorted(set(counts)) and counts[0] > schedule.layout.partitions


def test_offsets_expire_only_in_schedules_of_the_retention_family(tmp_path: Path) -> None:
    """Its broker settings come with its faults alone, and shrinking never shortens the stop
    (shorter, the offsets outlive it and the fault is gone)."""
    families = choose_families("retention,app")
    drawn = [draw(5, index, families) for index in range(12)]
    for schedule in drawn:
        path = tmp_path / f"{schedule.name}.toml"
        path.write_text(definition_text(schedule, APP, "at-least-once", dict([KINDS["lost"]])))
        broker = load_incident(path).profiles["vulnerable"].broker
        expiring = any(f.family == "retention" for f in schedule.faults)
        assert ("offsets.retention.minutes" in broker) == expiring, schedule.timeline()
    stop = next(f for s in drawn for f in s.faults if f.family == "retention")
    assert [s["do"] for s in stop.steps] == ["stop_apps", "idle", "start_apps"]
    assert all(simpler.steps == stop.steps for simpler in simpler_faults(stop))


def test_a_service_from_an_image_is_the_vulnerable_profile_alone(tmp_path: Path) -> None:
    schedule = draw(3, 0, choose_families(None))
    for arguments, command in (("", ""), ("--batch 10", "--batch 10")):
        path = tmp_path / f"{schedule.name}.toml"
        text = definition_text(schedule, arguments, "exactly-once", dict([KINDS["lost"]]),
                               image="team/orders:1")  # fmt: skip
        path.write_text(text)
        profiles = load_incident(path).profiles
        assert (profiles["vulnerable"].app.image, profiles["vulnerable"].app.command) == (
            "team/orders:1", command)  # fmt: skip
        assert profiles["remediated"].app.image is None
        assert "eos_processor" in profiles["remediated"].app.command


EXPECT_DEAD_LETTER = """
[topics.orders-dlq]
partitions = 1
role = "dead_letter"

[expect]
dead_letter = "orders-dlq"
filtered = "tests.apps.shop:is_payment"
"""


@pytest.mark.parametrize(
    ("guarantee", "reference"),
    [("at-least-once", "batch_forwarder"), ("exactly-once", "eos_processor")],
)
def test_a_service_that_dead_letters_is_drawn_with_poison_pills_and_a_reference_that_does_too(
    tmp_path: Path, guarantee: str, reference: str
) -> None:
    expect = tmp_path / "expect.toml"
    expect.write_text(EXPECT_DEAD_LETTER)
    service = read_shape(expect)
    schedule = draw(3, 0, choose_families(None))
    path = tmp_path / f"{schedule.name}.toml"
    path.write_text(definition_text(schedule, APP, guarantee, dict([KINDS["misrouted"]]),
                                    service=service))  # fmt: skip
    incident = load_incident(path)
    assert (incident.role("orders-dlq"), incident.expect.dead_letter) == ("dead_letter",
                                                                          "orders-dlq")  # fmt: skip
    assert incident.expect.filtered == "tests.apps.shop:is_payment"
    workload = incident.profiles["vulnerable"].workloads["events"]
    poisoned = workload.parameters["poison_at"]
    assert len(poisoned) == 3 and poisoned == service.poison_at(3, schedule.layout.records)
    assert incident.profiles["remediated"].app.command.endswith(
        f"{reference} --on-bad dead-letter --dead-letter-topic {{topic.orders-dlq}}"
        " --filtered tests.apps.shop:is_payment"
    )


def test_a_shape_no_reference_service_has_is_refused(tmp_path: Path) -> None:
    expect = tmp_path / "expect.toml"
    expect.write_text('[expect.fan_out]\nkinds = ["a", "b"]\nkind_of = "m:f"\n')
    with pytest.raises(ValueError, match=re.escape("[expect.fan_out] is not explored")):
        read_shape(expect)


def test_unknown_families_are_refused_naming_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown family disks.*allowed: app, groups"):
        choose_families("app,disks")
    assert [f.name for f in choose_families("brokers, app,brokers")] == ["brokers", "app"]


def test_budgets_read_as_seconds() -> None:
    assert [parse_budget(t) for t in ("90", "90s", "15m", "1.5h")] == [90, 90, 900, 5400]
    with pytest.raises(argparse.ArgumentTypeError, match="like 15m"):
        parse_budget("soon")


def _fault(family: str, after: int, **step: object) -> Fault:
    return Fault(family, after, ({"do": family, **step},))


def test_shrinking_keeps_only_the_fault_that_breaks_and_makes_it_simpler() -> None:
    faults = (
        _fault("pause", 100, seconds=6.0),
        _fault("kill", 300, times=3, gap_s=[1.0, 2.5]),
        _fault("restart", 500),
    )

    def still_fails(candidate: tuple[Fault, ...]) -> bool:
        return any(f.family == "kill" for f in candidate)

    shrunk = shrink(faults, still_fails, lambda fault: simpler_faults(fault, 1200))
    assert len(shrunk) == 1
    (kill,) = shrunk
    assert kill.steps[0]["times"] == 1 and kill.steps[0]["gap_s"] == [1.0, 1.0]
    assert kill.after_acks > 300  # a later start broke it as well


def test_a_fault_aimed_at_a_window_keeps_its_start_when_made_simpler() -> None:
    window = Window(COMMIT_AHEAD, 100.0, 150, 3)
    aimed = Fault("requests", 150, ({"do": "kafka_fault", "count": 3},), window)
    simpler = list(simpler_faults(aimed))
    assert [f.steps[0]["count"] for f in simpler] == [1]
    assert all(f.after_acks == 150 and f.aim == aimed.aim for f in simpler)


def test_shrinking_keeps_faults_that_only_break_together() -> None:
    faults = (_fault("a", 100), _fault("b", 200), _fault("c", 300))

    def still_fails(candidate: tuple[Fault, ...]) -> bool:
        families = {f.family for f in candidate}
        return {"a", "c"} <= families

    assert [f.family for f in shrink(faults, still_fails, lambda f: iter(()))] == ["a", "c"]


def test_shrinking_stops_when_the_time_is_up() -> None:
    faults = (_fault("a", 100), _fault("b", 200))
    assert shrink(faults, lambda c: True, simpler_faults, out_of_time=lambda: True) == faults


#: What a scripted play's anomaly shows as, in the symptoms a finding's signature names.
SHOWN_AS = {
    "lost": ("inputs_lost_in_worst_place", None),
    "misrouted": ("inputs_misrouted", None),
    "duplicate": ("reprocessed", None),
    "reordered": ("reordered", None),
    "unseen_at_deadline": ("backlog_drained", False),
}


def _outcome(anomalies: dict[str, int], **symptoms: object) -> Outcome:
    """A played run's outcome with these anomalies, each also in the symptom that shows it."""
    shown = {
        SHOWN_AS[name][0]: count if SHOWN_AS[name][1] is None else SHOWN_AS[name][1]
        for name, count in anomalies.items()
    }
    return Outcome("x", "vulnerable", "app", "at-least-once", "", False, None, anomalies,
                   {**shown, **symptoms}, 1.0, "")  # fmt: skip


def _symptoms(**measured: object) -> Outcome:
    return Outcome("x", "vulnerable", "app", "at-least-once", "", False, None, {},
                   dict(measured), 1.0, "")  # fmt: skip


def test_what_breaks_a_guarantee() -> None:
    """A play broke what the signature its finding would carry says: the same test as the
    written definition's, so a finding shows again when it is replayed."""
    lost, misrouted = _symptoms(inputs_lost_in_worst_place=2), _symptoms(inputs_misrouted=1)
    assert kinds_of(lost, "at-least-once", False) == {"lost"}
    assert kinds_of(misrouted, "at-least-once", False) == {"misrouted"}
    assert kinds_of(_symptoms(reprocessed=3), "at-least-once", False) == set()
    assert kinds_of(_symptoms(reprocessed=3), "exactly-once", False) == {"duplicated"}
    assert kinds_of(_symptoms(reordered=1), "exactly-once", False) == set()
    assert kinds_of(_symptoms(reordered=1), "exactly-once", True) == {"reordered"}
    assert kinds_of(_symptoms(backlog_drained=False), "at-least-once", False) == {"not drained"}
    assert kinds_of(_symptoms(backlog_drained=True), "exactly-once", True) == set()


def test_what_the_signature_would_not_show_is_not_a_finding() -> None:
    """Inputs the checker counts as unseen or lost somewhere, with the signature's symptoms not
    holding (the backlog drained, none lost in the place the gate judged), break nothing: a
    definition written from them would not reproduce."""
    outcome = _symptoms(backlog_drained=True, inputs_lost_in_worst_place=0)
    outcome.anomalies = {"unseen_at_deadline": 4, "lost": 2}
    assert kinds_of(outcome, "at-least-once", False) == set()


class ScriptedPlayer:
    """Stands in for the brokers and Spark in tests of the exploration's own decisions (which
    play confirms, which is set apart, when to give up): each play's outcome is scripted by
    profile. The real plays are in tests/test_explore_cli.py."""

    def __init__(
        self,
        yours: list[dict[str, int] | str],
        reference: dict[str, int] | list[dict[str, int]],
        jobs: int = 1,
    ) -> None:
        self.yours, self.reference, self.jobs = list(yours), reference, jobs
        self.played: list[str] = []
        self.rounds: list[int] = []

    def play(self, plays: list[tuple[Path, str]]) -> list[Outcome]:
        self.rounds.append(len(plays))
        return [self._one(profile) for _, profile in plays]

    def _one(self, profile: str) -> Outcome:
        self.played.append(profile)
        if profile == "remediated":  # a list: one play each, then none broken
            if isinstance(self.reference, list):
                return _outcome(self.reference.pop(0) if self.reference else {})
            return _outcome(self.reference)
        script = self.yours.pop(0) if self.yours else {}
        if isinstance(script, str):
            outcome = _outcome({})
            outcome.error = script
            return outcome
        return _outcome(script)

    def close(self) -> None:
        pass


def _explorer(
    player: ScriptedPlayer, tmp_path: Path, search: str = "random", families: str = "app,requests"
) -> Explorer:
    return Explorer(
        player, app=APP, guarantee="at-least-once", families=choose_families(families),
        seed=5, budget_s=600, out_dir=tmp_path / "out", work_dir=tmp_path / "work",
        search=search, progress=lambda line: None,
    )  # fmt: skip


def test_a_finding_is_kept_when_it_comes_back_and_the_reference_survives(tmp_path: Path) -> None:
    lost = {"lost": 3}
    # drawn and broken in all five plays; the reference holds; each shrinking candidate misses
    player = ScriptedPlayer([lost] * 5, reference={})
    result = _explorer(player, tmp_path).explore()
    (finding,) = result.findings
    assert finding.kind == "lost" and finding.shrunk == finding.drawn
    assert player.played[:7] == ["vulnerable"] * 5 + ["remediated"] * 2
    written = load_incident(finding.path)
    assert [str(c) for c in written.signature] == ["inputs_lost_in_worst_place >= 1"]


def test_a_smaller_schedule_must_break_the_service_every_time_it_is_played(
    tmp_path: Path,
) -> None:
    lost = {"lost": 3}
    # broken five times of five; the reference holds; the first candidate breaks it one play in
    # two: it is not taken, nor any after it
    player = ScriptedPlayer([lost] * 5 + [lost, {}, lost], reference={})
    result = _explorer(player, tmp_path).explore()
    (finding,) = result.findings
    assert finding.shrunk == finding.drawn
    assert player.played[:9] == ["vulnerable"] * 5 + ["remediated"] * 2 + ["vulnerable"] * 2


def test_a_schedule_that_breaks_the_service_now_and_then_is_intermittent_not_written(
    tmp_path: Path,
) -> None:
    lost = {"lost": 3}
    player = ScriptedPlayer([lost, {}, lost, {}, lost], reference={})
    explorer = _explorer(player, tmp_path)
    explorer.out_of_time = lambda: len(player.played) >= 5  # type: ignore[method-assign]
    result = explorer.explore()
    assert not result.findings and player.played == ["vulnerable"] * 5
    (intermittent,) = result.intermittent
    assert (intermittent.kind, intermittent.broke, intermittent.plays) == ("lost", 3, 5)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.toml"))
    report = write_report(result, 600, tmp_path / "out").read_text()
    assert f"- {intermittent.schedule}: lost in 3 of 5 plays; " in report


def test_a_schedule_the_reference_service_breaks_too_is_set_apart(tmp_path: Path) -> None:
    lost = {"lost": 3}
    player = ScriptedPlayer([lost] * 5, reference={"lost": 1})
    explorer = _explorer(player, tmp_path)
    explorer.out_of_time = lambda: len(player.played) >= 7  # type: ignore[method-assign]
    result = explorer.explore()
    assert not result.findings and result.apart == ["explored-5-0"]


def test_a_schedule_the_reference_service_breaks_now_and_then_is_set_apart(
    tmp_path: Path,
) -> None:
    lost = {"lost": 3}
    player = ScriptedPlayer([lost] * 5, reference=[{}, {"lost": 1}])
    explorer = _explorer(player, tmp_path)
    explorer.out_of_time = lambda: len(player.played) >= 7  # type: ignore[method-assign]
    result = explorer.explore()
    assert not result.findings and result.apart == ["explored-5-0"]
    assert player.played == ["vulnerable"] * 5 + ["remediated"] * 2


def test_a_finding_whose_shrinking_the_budget_cut_says_so(tmp_path: Path) -> None:
    lost = {"lost": 3}
    player = ScriptedPlayer([lost] * 5, reference={})
    explorer = _explorer(player, tmp_path)
    explorer.out_of_time = lambda: len(player.played) >= 7  # type: ignore[method-assign]
    result = explorer.explore()
    (finding,) = result.findings
    assert finding.cut_short == "the budget ran out" and finding.shrunk == finding.drawn
    report = write_report(result, 600, tmp_path / "out").read_text()
    assert "before shrinking was done (the budget ran out: explore again" in report


def test_a_service_that_never_plays_stops_the_exploration(tmp_path: Path) -> None:
    player = ScriptedPlayer(["exited with code 3"] * 5, reference={})
    with pytest.raises(ExploreError, match="the first 3 times; the last time: exited with code 3"):
        _explorer(player, tmp_path).explore()
    assert player.played == ["vulnerable"] * 3


def test_side_by_side_schedules_are_drawn_and_confirmed_in_rounds(tmp_path: Path) -> None:
    lost = {"lost": 3}
    # two drawn at once, the second breaks; its four more plays two at a time; the reference
    # twice at once; a shrinking candidate's round misses
    player = ScriptedPlayer([{}] + [lost] * 5, reference={}, jobs=2)
    explorer = _explorer(player, tmp_path)
    result = explorer.explore()
    (finding,) = result.findings
    assert finding.drawn.index == 1
    assert player.rounds[:4] == [2, 2, 2, 2]
    assert player.played[:8] == ["vulnerable"] * 6 + ["remediated"] * 2


def test_the_html_report_escapes_and_groups_what_the_markdown_says() -> None:
    page = html_page(
        ["# Exploration, seed 1", "## lost: `a.toml`", "1. kill(<3>)", "1. idle", "",
         "| a | b |", "|---|---|", "| 1 | x & y |"]
    )  # fmt: skip
    assert "<h2>lost: <code>a.toml</code></h2>" in page
    assert "<ul><li>kill(&lt;3&gt;)</li><li>idle</li></ul>" in page
    rows = "<tr><td>a</td><td>b</td></tr><tr><td>1</td><td>x &amp; y</td></tr>"
    assert f"<table>{rows}</table>" in page


def test_a_service_that_played_once_is_not_given_up_on(tmp_path: Path) -> None:
    failing = "the Produce fault acted 0 of 3 times within 60s"
    player = ScriptedPlayer([{}, failing, failing, failing, {}], reference={})
    explorer = _explorer(player, tmp_path)
    explorer.out_of_time = lambda: len(player.played) >= 5  # type: ignore[method-assign]
    result = explorer.explore()
    assert [t.error for t in result.tried].count(failing) == 3 and not result.findings


def test_shrinking_begins_no_candidate_that_would_end_past_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each round of plays takes 100 s of a fake clock: with 800 s, the finding's draw and its
    four more plays (one at a time) take 500 s, the reference's two plays 100 s and its first
    candidate 200 s (two plays, one at a time): a second one would end at 1,000 s, so
    shrinking stops at 800 s, cut short."""
    clock = [0.0]
    monkeypatch.setattr(explorer_module.time, "monotonic", lambda: clock[0])

    class Slow(ScriptedPlayer):
        def play(self, plays: list[tuple[Path, str]]) -> list[Outcome]:
            clock[0] += 100.0
            return super().play(plays)

    lost = {"lost": 3}
    player = Slow([lost] * 12, reference={})
    explorer = _explorer(player, tmp_path)
    explorer.result.started = clock[0]  # on the fake clock too
    explorer.budget_s = 800.0
    result = explorer.explore()
    (finding,) = result.findings
    assert clock[0] <= 800.0
    assert finding.cut_short == "the budget ran out"


PIPELINE = """
[topics.enriched]
partitions = 2
role = "internal"

[apps.enrich]
command = "{python} -m kafka_replay_incidents.apps.batch_forwarder"
reads = ["input"]
writes = ["enriched"]

[apps.bill]
command = "{python} -m kafka_replay_incidents.apps.batch_forwarder"
reads = ["enriched"]
writes = ["output"]
"""


@pytest.mark.parametrize(
    ("given", "place"), [("enrich=" + APP, "enrich"), (APP, "bill")], ids=["named", "plain"]
)
def test_a_pipelines_service_is_drawn_in_its_place_and_the_reference_takes_it(
    tmp_path: Path, given: str, place: str
) -> None:
    expect = tmp_path / "pipeline.toml"
    expect.write_text(PIPELINE)
    service, app, image = read_shape(expect).placed(given, None)
    assert (service.place, app, image) == (place, APP, None)
    drawn = (draw(5, n, choose_families("app,brokers")) for n in range(20))
    schedule = next(s for s in drawn if any(f.family == "app" for f in s.faults))
    path = tmp_path / f"{schedule.name}.toml"
    path.write_text(definition_text(schedule, app, "at-least-once", dict([KINDS["lost"]]),
                                    service=service))  # fmt: skip
    incident = load_incident(path)
    vulnerable, remediated = incident.profiles["vulnerable"], incident.profiles["remediated"]
    assert list(vulnerable.apps) == ["enrich", "bill"] and incident.role("enriched") == "internal"
    assert vulnerable.apps[place].command == APP
    assert vulnerable.apps[place].instances == schedule.layout.instances
    assert remediated.apps[place].command.endswith("batch_forwarder")
    other = next(name for name in vulnerable.apps if name != place)
    assert remediated.apps[other] == vulnerable.apps[other]
    aimed = [s for s in incident.steps if s.do in ("kill_at_random", "restart_instance")]
    assert aimed and all(step.options["app"] == place for step in aimed)


def test_a_place_the_pipeline_has_not_is_refused_naming_its_services(tmp_path: Path) -> None:
    expect = tmp_path / "pipeline.toml"
    expect.write_text(PIPELINE)
    with pytest.raises(ValueError, match=r"no service ship in --expect .*; its services: enrich"):
        read_shape(expect).placed("ship=" + APP, None)
    one = tmp_path / "one.toml"
    one.write_text('[expect]\nfiltered = "tests.apps.shop:is_payment"\n')
    with pytest.raises(ValueError, match=r"has no \[apps.NAME\] tables"):
        read_shape(one).placed("ship=" + APP, None)


def test_a_hangs_finding_says_what_the_service_was_doing_when_it_stopped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "events").mkdir(parents=True)
    (run / "logs").mkdir()
    stuck = {"kind": "killed_after_grace", "instance": 1, "pid": 7, "grace_s": 10.0}
    (run / "events" / "lifecycle.jsonl").write_text(json.dumps(stuck) + "\n")
    (run / "logs" / "app-1.log").write_text("started\ncommitting transaction\n")

    class Hanging(ScriptedPlayer):
        def _one(self, profile: str) -> Outcome:
            outcome = super()._one(profile)
            if profile == "vulnerable":
                outcome.run_dir, outcome.not_judged = str(run), "40 inputs not in the output"
            return outcome

    player = Hanging([{"unseen_at_deadline": 40}] * 5, reference={})
    explorer = _explorer(player, tmp_path)
    explorer.out_of_time = lambda: len(player.played) >= 7  # type: ignore[method-assign]
    (finding,) = explorer.explore().findings
    assert finding.kind == "not drained"
    report = write_report(explorer.result, 600, tmp_path / "out").read_text()
    assert "What the service was doing when it stopped:" in report
    assert "- 40 inputs not in the output" in report
    assert "- instance 1 ignored SIGTERM for 10.0 s at the run's end and was killed" in report
    assert "- app-1's last lines: started | committing transaction" in report
