"""The docs, the registries and the definition reader agree on steps, symptoms and generators.

``docs/incidents.md`` lists every step kind with its fields, every symptom and every workload
generator with its parameters; the registries (``STEPS``, ``SYMPTOMS``, ``GENERATORS``) are what
the engine runs, and ``kafka_replay.definitions.definition`` is what reads a definition. A name
added to one and not the others fails here. Pure: no Kafka, no Spark session.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest

from kafka_replay.definitions.definition import load_incident
from kafka_replay.definitions.model import DefinitionError
from kafka_replay.definitions.vocabulary import REQUIRED, SYMPTOMS, Field, step_kinds
from kafka_replay.workload.generators import GENERATORS

#: The built-in step kinds (and symptoms) registered, as the definition reader sees them.
STEPS = step_kinds()
DOCS = Path(__file__).resolve().parent.parent / "docs"
NAME = re.compile(r"`(\w+)`")

DEFINITION = """
name = "{name}"
title = "t"
post = "000"
guarantee = "at-least-once"
time_scale = "s"

[topics]
{topics}

[app]
command = "{{python}} -m kafka_replay_incidents.apps.batch_forwarder"

[workloads.w]
{workload}

[[steps]]
{step}

[signature]
{signature} = ">= 1"

[profiles.vulnerable]
description = "v"

[profiles.remediated]
description = "r"
{more}
"""


def section_table(doc: str, heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first table under ``## heading``, header excluded."""
    text = (DOCS / doc).read_text()
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"{doc} has no '## {heading}' section"
    rows: list[list[str]] = []
    for line in match.group(1).splitlines():
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break  # the first table ended
    assert len(rows) > 2, f"no table under '## {heading}' in {doc}"
    return rows[2:]  # past the header and the |---| line


def documented(heading: str) -> dict[str, list[str]]:
    """First column's name -> the backticked names of the second column, for one docs table."""
    table: dict[str, list[str]] = {}
    for cells in section_table("incidents.md", heading):
        (name,) = NAME.findall(cells[0])
        assert name not in table, f"{name} is listed twice under '## {heading}'"
        table[name] = NAME.findall(cells[1]) if len(cells) > 2 else []
    return table


def disagreements(docs: dict[str, set[str]], registry: dict[str, set[str]]) -> list[str]:
    """What one side names and the other does not, readably."""
    found = [f"{n}: registered, not in the docs" for n in registry if n not in docs]
    found += [f"{n}: in the docs, not registered" for n in docs if n not in registry]
    for name in docs.keys() & registry.keys():
        if docs[name] != registry[name]:
            found.append(
                f"{name}: the docs say {sorted(docs[name])}, the registry {sorted(registry[name])}"
            )
    return found


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):  # an inline table (restart_instance's client)
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)  # strings, ints and floats read the same in TOML


def write(tmp_path: Path, name: str, **parts: str) -> Path:
    defaults = {
        "workload": 'generator = "student_onboarding"\ncount = 10',
        "step": 'do = "produce"\nworkload = "w"',
        "signature": "rejected_commits",
        "topics": "input = 3\noutput = 3\nside_effects = 3",
        "more": "",
    }
    text = DEFINITION.format(name=name, **(defaults | parts))
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


#: Values the steps' validators need (a defined workload, a [shortest, longest] pair).
SAMPLE_VALUES: dict[str, Any] = {
    "workload": "w",
    "gap_s": [1.0, 2.5],
    "client": {"group.protocol": "consumer"},
    "topic": "side_effects",  # a topic of the definition's, by its name
    "app": "app",  # the one app's name
    "api": "Produce",  # an API of the Kafka protocol
    "action": "error",  # a kafka_fault's, which then takes an error
    "error": "NOT_ENOUGH_REPLICAS",  # an error of the Kafka protocol
}
#: What a step needs in the definition beside it: ``fail_over`` a mirror to move to, whose runs
#: are judged on rows.
BESIDE: dict[str, dict[str, str]] = {
    "fail_over": {
        "topics": "input = 3\noutput = 0",
        "more": '[sink]\ntables = "CREATE TABLE t (event_id text)"\ntable = "t"\n\n[mirror]',
    }
}
#: Optional fields that the sample value of a required one needs beside it.
NEEDED_WITH: dict[str, tuple[str, ...]] = {"action": ("error",)}


def sample(name: str, spec: Field) -> Any:
    """A valid value for every field, given or not by default, so each one is read."""
    if name in SAMPLE_VALUES:
        return SAMPLE_VALUES[name]
    if spec.choices:
        return spec.choices[-1]
    kind = spec.kind[0] if isinstance(spec.kind, tuple) else spec.kind
    return {bool: True, int: 2, float: 1.5, str: "quiet", list: [1]}[kind]


# --- the docs and the registries ------------------------------------------------------------


def test_the_steps_table_lists_every_step_with_its_fields() -> None:
    docs = {name: set(fields) for name, fields in documented("Steps").items()}
    registry = {name: set(kind.fields) for name, kind in STEPS.items()}
    assert not disagreements(docs, registry), disagreements(docs, registry)


def test_the_symptoms_table_lists_every_symptom() -> None:
    docs: dict[str, set[str]] = {name: set() for name in documented("Symptoms")}
    registry: dict[str, set[str]] = {name: set() for name in SYMPTOMS}
    assert not disagreements(docs, registry), disagreements(docs, registry)


def test_the_generators_table_lists_every_generator_with_its_parameters() -> None:
    docs = {name: set(parameters) for name, parameters in documented("Workload generators").items()}
    registry = {
        name: set(inspect.signature(function).parameters) for name, function in GENERATORS.items()
    }
    assert not disagreements(docs, registry), disagreements(docs, registry)


# --- the registries and the definition reader -----------------------------------------------


@pytest.mark.parametrize("do", list(STEPS))
def test_the_reader_takes_every_registered_step_with_every_field(tmp_path: Path, do: str) -> None:
    fields = STEPS[do].fields
    options = {name: sample(name, spec) for name, spec in fields.items()}
    step = "\n".join([f'do = "{do}"', *(f"{k} = {toml_value(v)}" for k, v in options.items())])
    incident = load_incident(write(tmp_path, f"step-{do}", step=step, **BESIDE.get(do, {})))
    (loaded,) = incident.steps
    assert loaded.do == do
    assert dict(loaded.options) == options


@pytest.mark.parametrize("do", list(STEPS))
def test_the_reader_fills_in_every_default_of_a_step(tmp_path: Path, do: str) -> None:
    fields = STEPS[do].fields
    required = {n: s for n, s in fields.items() if s.default is REQUIRED}
    required |= {n: fields[n] for r in list(required) for n in NEEDED_WITH.get(r, ())}
    step = "\n".join(
        [f'do = "{do}"', *(f"{n} = {toml_value(sample(n, s))}" for n, s in required.items())]
    )
    (loaded,) = load_incident(write(tmp_path, f"bare-{do}", step=step, **BESIDE.get(do, {}))).steps
    assert set(loaded.options) == set(STEPS[do].fields)


def test_the_reader_refuses_an_unknown_step_listing_the_registered_ones(tmp_path: Path) -> None:
    path = write(tmp_path, "unknown-step", step='do = "explode"')
    with pytest.raises(DefinitionError) as caught:
        load_incident(path)
    assert caught.value.where == "steps[0].do"
    assert caught.value.problem == f"unknown step 'explode'; steps: {', '.join(STEPS)}"
    assert str(caught.value).startswith(f"{path}: steps[0].do: ")


@pytest.mark.parametrize("name", list(SYMPTOMS))
def test_the_reader_takes_every_registered_symptom(tmp_path: Path, name: str) -> None:
    incident = load_incident(write(tmp_path, f"symptom-{name}", signature=name))
    assert [c.symptom for c in incident.signature] == [name]


def test_the_reader_refuses_an_unknown_symptom_listing_the_registered_ones(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError) as caught:
        load_incident(write(tmp_path, "unknown-symptom", signature="no_such_symptom"))
    assert caught.value.where == "signature.no_such_symptom"
    assert caught.value.problem.endswith(", ".join(sorted(SYMPTOMS)))


@pytest.mark.parametrize("name", list(GENERATORS))
def test_the_reader_takes_every_generator_parameter(tmp_path: Path, name: str) -> None:
    parameters = {
        key: parameter.default
        for key, parameter in inspect.signature(GENERATORS[name]).parameters.items()
        if parameter.default is not None  # TOML has no null: a None default is left unset
    }
    lines = [f'generator = "{name}"', *(f"{k} = {toml_value(v)}" for k, v in parameters.items())]
    incident = load_incident(write(tmp_path, f"generator-{name}", workload="\n".join(lines)))
    assert incident.profiles["vulnerable"].workloads["w"].seed == parameters["seed"]


def test_the_reader_refuses_an_unknown_generator_listing_the_registered_ones(
    tmp_path: Path,
) -> None:
    with pytest.raises(DefinitionError) as caught:
        load_incident(write(tmp_path, "unknown-generator", workload='generator = "no_such"'))
    assert caught.value.where == "workloads.w.generator"
    assert caught.value.problem.endswith(", ".join(GENERATORS))


# --- the checker's anomalies ----------------------------------------------------------------


def test_every_checker_anomaly_is_documented() -> None:
    doc = DOCS / "checker.md"
    if not doc.is_file():
        pytest.skip("docs/checker.md does not exist yet")
    from kafka_replay.checker.analysis import ANOMALIES

    text = doc.read_text()
    missing = [name for name in ANOMALIES if not re.search(rf"\b{re.escape(name)}\b", text)]
    assert not missing, f"anomalies not in docs/checker.md: {', '.join(missing)}"


def test_the_docs_list_every_backend_and_capability() -> None:
    """The README's backend table names every built-in backend; extending.md every capability
    and which steps need it, as the step registry says."""
    from kafka_replay.cluster.backends import backends
    from kafka_replay.cluster.capabilities import CAPABILITIES
    from kafka_replay.definitions.model import GROUP_TYPE_NEEDS

    readme = (DOCS.parent / "README.md").read_text()
    for name in backends():
        assert f"| `{name}" in readme, f"README's backend table lacks {name}"
    extending = " ".join((DOCS / "extending.md").read_text().split())
    for capability in CAPABILITIES:
        needing = [kind.name for kind in STEPS.values() if capability in kind.may_need]
        needing += [kind for kind, needs in GROUP_TYPE_NEEDS.items() if needs == capability]
        assert needing, f"no step or group type needs {capability}"
        said = extending.split(f"`{capability}` (", 1)[1].split(")", 1)[0]
        assert sorted(NAME.findall(said)) == sorted(needing), capability
