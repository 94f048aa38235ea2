"""Client settings in Apache Kafka's names, and what each becomes for librdkafka.

Definitions write ``[client]`` with the property names of Apache Kafka's own (Java) client:
``max.poll.records``, ``fetch.max.wait.ms``, ``metadata.max.age.ms``... An app in any
language gets them in the dialect it can use (see :mod:`kafka_replay.apps.contract`):

- a Java (or any Apache Kafka client) app: a ``.properties`` file with the names as written
  (:func:`java_properties`);
- a librdkafka app (Python's confluent-kafka, Go, .NET, C...): a JSON object translated by
  :data:`KNOWN` (:func:`librdkafka_config`). Most names are the same; a few differ
  (``fetch.max.wait.ms`` is ``fetch.wait.max.ms`` there); a few have no librdkafka property
  with the same meaning and are left out: ``max.poll.records`` is a count the app asks for
  itself (``consume(num_messages=N)``), given on its own (:func:`batch_size`).

A name that is not in the table is refused (:func:`check_client_config`), so a definition
cannot carry a setting that one dialect would silently drop or misread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: The Java client's built-in assignors and librdkafka's names for them (None: it has none).
ASSIGNORS: dict[str, str | None] = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
    "org.apache.kafka.clients.consumer.StickyAssignor": None,
}


@dataclass(frozen=True)
class Setting:
    """One client property: Apache Kafka's name, librdkafka's, and what values it takes."""

    name: str  # Apache Kafka's (Java client) name, as definitions write it
    librdkafka: str | None  # librdkafka's property of the same meaning; None: there is none
    client: str  # consumer, producer or any
    kind: type  # int, bool or str
    choices: tuple[str, ...] = ()  # allowed values of a str setting (each item of a list)
    listed: bool = False  # a comma-separated list of choices
    note: str = ""  # what differs, or what happens instead when librdkafka has no property
    to_librdkafka: Callable[[Any], Any] | None = None  # value translation; None: unchanged


def _assignors(value: str) -> str | None:
    """Java assignor classes -> librdkafka strategies, those it lacks dropped (None if all)."""
    names = [ASSIGNORS[item.strip()] for item in value.split(",") if item.strip()]
    kept = [name for name in names if name is not None]
    return ",".join(kept) if kept else None


def _same(name: str, client: str, kind: type, **extra: Any) -> Setting:
    return Setting(name, name, client, kind, **extra)


_TABLE = (
    # The consumer: the poll loop and the group.
    Setting(
        "max.poll.records",
        None,
        "consumer",
        int,
        note="no librdkafka property: the app asks for that many records per call "
        "(consume(num_messages=N)); given as REPLAY_MAX_POLL_RECORDS",
    ),
    _same("max.poll.interval.ms", "consumer", int),
    _same("session.timeout.ms", "consumer", int, note="classic group protocol only"),
    _same("heartbeat.interval.ms", "consumer", int, note="classic group protocol only"),
    _same(
        "group.instance.id",
        "consumer",
        str,
        note="static membership (KIP-345); {instance} in it becomes each instance's number",
    ),
    _same("group.protocol", "consumer", str, choices=("classic", "consumer")),
    _same(
        "group.remote.assignor",
        "consumer",
        str,
        choices=("uniform", "range"),
        note="consumer group protocol only",
    ),
    _same(
        "partition.assignment.strategy",
        "consumer",
        str,
        choices=tuple(ASSIGNORS),
        listed=True,
        note="Java class names, comma-separated; librdkafka gets range, roundrobin or "
        "cooperative-sticky; StickyAssignor has no librdkafka counterpart and is dropped "
        "from the list (the key is left out if nothing remains); classic group protocol only",
        to_librdkafka=_assignors,
    ),
    _same("enable.auto.commit", "consumer", bool),
    _same("auto.commit.interval.ms", "consumer", int),
    _same(
        "auto.offset.reset",
        "consumer",
        str,
        choices=("earliest", "latest", "none"),
        note="none (fail when there is no offset) becomes librdkafka's error",
        to_librdkafka=lambda value: "error" if value == "none" else value,
    ),
    _same("isolation.level", "consumer", str, choices=("read_uncommitted", "read_committed")),
    # The consumer: fetching.
    Setting("fetch.max.wait.ms", "fetch.wait.max.ms", "consumer", int),
    _same("fetch.min.bytes", "consumer", int),
    _same("fetch.max.bytes", "consumer", int),
    _same(
        "max.partition.fetch.bytes",
        "consumer",
        int,
        note="librdkafka's alias of fetch.message.max.bytes",
    ),
    _same("allow.auto.create.topics", "consumer", bool),
    # Any client: metadata and connections.
    Setting(
        "metadata.max.age.ms",
        "topic.metadata.refresh.interval.ms",
        "any",
        int,
        note="the periodic refresh that finds new partitions; librdkafka's own "
        "metadata.max.age.ms is a cache age, not this",
    ),
    Setting(
        "request.timeout.ms",
        None,
        "any",
        int,
        note="no librdkafka property with this meaning: its request.timeout.ms is the "
        "producer's broker-side acks timeout, and its socket.timeout.ms is added to "
        "fetch.wait.max.ms for fetches",
    ),
    Setting(
        "default.api.timeout.ms",
        None,
        "consumer",
        int,
        note="no librdkafka property: its calls take their timeout as an argument",
    ),
    _same("retry.backoff.ms", "any", int),
    _same("retry.backoff.max.ms", "any", int),
    _same("reconnect.backoff.ms", "any", int),
    _same("reconnect.backoff.max.ms", "any", int),
    _same("socket.connection.setup.timeout.ms", "any", int),
    _same("connections.max.idle.ms", "any", int),
    Setting(
        "receive.buffer.bytes",
        "socket.receive.buffer.bytes",
        "any",
        int,
        note="-1 (the OS default) becomes librdkafka's 0",
        to_librdkafka=lambda value: 0 if value == -1 else value,
    ),
    Setting(
        "send.buffer.bytes",
        "socket.send.buffer.bytes",
        "any",
        int,
        note="-1 (the OS default) becomes librdkafka's 0",
        to_librdkafka=lambda value: 0 if value == -1 else value,
    ),
    _same("client.rack", "any", str),
    # The app's producer (exactly-once apps).
    _same("transaction.timeout.ms", "producer", int),
    _same("enable.idempotence", "producer", bool),
    _same("acks", "producer", str, choices=("all", "-1", "0", "1")),
    _same("linger.ms", "producer", int),
    _same("batch.size", "producer", int),
    _same("delivery.timeout.ms", "producer", int, note="librdkafka's alias of message.timeout.ms"),
    Setting(
        "max.request.size",
        "message.max.bytes",
        "producer",
        int,
        note="the largest record (Java: request) the producer sends; librdkafka refuses a "
        "larger message at produce() (MSG_SIZE_TOO_LARGE)",
    ),
    _same("max.in.flight.requests.per.connection", "producer", int),
    _same("compression.type", "producer", str, choices=("none", "gzip", "snappy", "lz4", "zstd")),
)

#: Every client setting a definition may write, by Apache Kafka's name.
KNOWN: dict[str, Setting] = {setting.name: setting for setting in _TABLE}

#: librdkafka names that differ from Apache Kafka's, to point a definition at the right one.
_FROM_LIBRDKAFKA = {
    s.librdkafka: s.name for s in _TABLE if s.librdkafka is not None and s.librdkafka != s.name
}


#: librdkafka's name -> the client that reads it (consumer, producer or any).
_CLIENT_OF = {s.librdkafka: s.client for s in _TABLE if s.librdkafka is not None}


def for_client(config: Mapping[str, Any], client: str) -> dict[str, Any]:
    """The part of a librdkafka config that a ``client`` (consumer or producer) reads.

    librdkafka warns about, and ignores, a consumer's property given to a producer and the
    reverse; an app that hands each client its part gets neither. Names not in the table pass.
    """
    return {k: v for k, v in config.items() if _CLIENT_OF.get(k, "any") in (client, "any")}


def unknown_keys(config: Mapping[str, Any]) -> list[str]:
    """The keys of ``config`` that are not Apache Kafka client settings this harness knows."""
    return sorted(key for key in config if key not in KNOWN)


def _value_problem(setting: Setting, value: Any) -> str | None:
    name = setting.name
    if setting.kind is bool:
        return None if isinstance(value, bool) else f"{name!r} must be true or false"
    if setting.kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{name!r} must be an integer, got {value!r}"
        if name == "max.poll.records" and value < 1:
            return f"{name!r} must be at least 1, got {value}"
        return None
    if not isinstance(value, str):
        return f"{name!r} must be a string, got {value!r}"
    if setting.choices:
        items = [item.strip() for item in value.split(",")] if setting.listed else [value]
        bad = [item for item in items if item not in setting.choices]
        if bad or not items:
            how = "a comma-separated list of" if setting.listed else "one of"
            return f"{name!r} must be {how} {', '.join(setting.choices)}; got {value!r}"
    return None


def check_client_config(config: Mapping[str, Any]) -> str | None:
    """What is wrong with a ``[client]`` table (unknown names, bad values), or None."""
    unknown = unknown_keys(config)
    if unknown:
        hints = [
            f"{key!r} is librdkafka's name, write {_FROM_LIBRDKAFKA[key]!r}"
            for key in unknown
            if key in _FROM_LIBRDKAFKA
        ]
        return (
            f"unknown client setting{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(k) for k in unknown)}"
            + (f" ({'; '.join(hints)})" if hints else "")
            + "; [client] takes Apache Kafka's (Java client) names: "
            + ", ".join(sorted(KNOWN))
        )
    for key, value in config.items():
        problem = _value_problem(KNOWN[key], value)
        if problem:
            return problem
    return None


def _checked(config: Mapping[str, Any]) -> Mapping[str, Any]:
    problem = check_client_config(config)
    if problem:
        raise ValueError(problem)
    return config


def librdkafka_config(kafka_config: Mapping[str, Any]) -> dict[str, Any]:
    """The same settings for a librdkafka client; those it has no property for are left out."""
    translated: dict[str, Any] = {}
    for key, value in _checked(kafka_config).items():
        setting = KNOWN[key]
        if setting.librdkafka is None:
            continue
        if setting.to_librdkafka is not None:
            value = setting.to_librdkafka(value)
            if value is None:
                continue
        translated[setting.librdkafka] = value
    return translated


def _escape(text: str, key: bool) -> str:
    """Escape for a ``.properties`` line (``java.util.Properties.load``)."""
    out = []
    for index, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in "\n\r\t\f":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}[char])
        elif char in "=:#!" and (key or index == 0):
            out.append("\\" + char)
        elif char == " " and (key or index == 0):
            out.append("\\ ")
        elif ord(char) > 0x7E or ord(char) < 0x20:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def _java_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def java_properties(kafka_config: Mapping[str, Any]) -> str:
    """The settings as a Java ``.properties`` text, Apache Kafka's names and values as written."""
    lines = ["# Client settings the incident imposes (Apache Kafka names), from kafka-replay"]
    lines += [
        properties_line(key, _java_value(value)) for key, value in _checked(kafka_config).items()
    ]
    return "\n".join(lines) + "\n"


def properties_line(key: str, value: str) -> str:
    """``key=value`` as ``java.util.Properties.load`` reads it back."""
    return f"{_escape(key, key=True)}={_escape(value, key=False)}"


def for_instance(kafka_config: Mapping[str, Any], instance: int) -> dict[str, Any]:
    """The settings one instance of the app gets: ``{instance}`` in a text value becomes its
    number, so ``group.instance.id = "billing-{instance}"`` makes one static member each."""
    number = str(instance)
    return {
        key: value.replace("{instance}", number) if isinstance(value, str) else value
        for key, value in kafka_config.items()
    }


def distinct_members(kafka_config: Mapping[str, Any], instances: int) -> int:
    """How many group members ``instances`` running instances can be: those given one
    ``group.instance.id`` are one static member (each newcomer takes the id over and the
    broker fences the one before), so waiting for more would wait forever."""
    static = kafka_config.get("group.instance.id")
    if not isinstance(static, str):
        return instances
    return len({static.replace("{instance}", str(i)) for i in range(instances)})


def batch_size(kafka_config: Mapping[str, Any]) -> int | None:
    """``max.poll.records``: how many records the app should take per poll, if the incident says."""
    value = kafka_config.get("max.poll.records")
    if value is None:
        return None
    problem = _value_problem(KNOWN["max.poll.records"], value)
    if problem:
        raise ValueError(problem)
    return int(value)
