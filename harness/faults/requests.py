"""Faults aimed at Kafka requests: the answer to a chosen Produce lost, a commit answered
with an error, a request delayed, the app that sent a commit killed before it is answered.

A network fault hits whatever is in flight when it starts, so whether it catches a request
after the broker acted on it is chance. These act on the requests themselves, through the proxy
the cluster puts in front of every broker (:mod:`kafka_replay.cluster.request_proxy`): the
``nth`` matching request of an API, from the app's clients or the workload producer's, on the
brokers a role names, ``count`` times. A step waits until the fault acted that many times, so
a run that says it lost three Produce answers lost exactly three.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kafka_replay.cluster.kafka_answers import AnswerError, error_code
from kafka_replay.cluster.request_proxy import ACTIONS, RequestFault, RequestProxyError
from kafka_replay.waiting import poll
from kafka_replay.workload.producer import WORKLOAD_CLIENT_ID

from .brokers import BrokerFaultError
from .network import NetworkFaults

__all__ = ["ACTIONS", "CLIENTS", "RequestFaults"]

#: Whose requests a fault acts on -> (client-id prefixes it takes, prefixes it passes by).
CLIENTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "all": ((), ()),
    "app": ((), (WORKLOAD_CLIENT_ID,)),  # every client but the harness's producer
    "workload": ((WORKLOAD_CLIENT_ID,), ()),
}


class RequestFaults(NetworkFaults):
    """The request faults of one run, on the proxies of the brokers a role names."""

    def play_request_fault(
        self,
        target: dict[str, Any],
        options: dict[str, Any],
        timeout: float,
        kill_sender: Callable[[int], Any] | None = None,
    ) -> dict[str, Any]:
        """Act on the chosen requests ``count`` times, then remove the fault.

        ``options``: ``api``, ``action``, ``clients`` (a :data:`CLIENTS` key), ``nth``,
        ``every``, ``count``, ``delay_ms``, ``error`` (an error's name, for ``error``).
        ``kill_sender`` (action ``kill_sender``) is called with the client port of each chosen
        request once the broker answered it, while its answer is held back; what it returns is
        listed under ``killed``; a chosen request whose connection ended before its answer came
        (its sender gone already) counts as done, under ``unanswered``. Raises
        :class:`BrokerFaultError` when the fault has not acted ``count`` times within
        ``timeout`` seconds, saying how many it matched.
        """
        nodes = self.nodes(target["role"], target["topic"], target["partition"])
        taking, passing = CLIENTS[options["clients"]]
        try:
            fault = RequestFault(
                options["api"],
                options["action"],
                clients=taking,
                skip_clients=passing,
                nth=options["nth"],
                every=options["every"],
                count=options["count"],
                delay_ms=options["delay_ms"],
                error=error_code(options["error"]) if options.get("error") else 0,
                brokers=frozenset(self.cluster.proxy_name(node) for node in nodes),
            )
        except (RequestProxyError, AnswerError) as exc:
            raise BrokerFaultError(str(exc)) from exc
        holding = options["action"] == "kill_sender"
        if holding and kill_sender is None:
            raise BrokerFaultError("a kill_sender fault needs a way to kill the sender")
        before, started = self.leaders(), time.time()
        killed: list[Any] = []
        self.proxy.add_fault(fault)
        count = options["count"]

        def done() -> bool:
            while holding and len(killed) < len(fault.answered):
                killed.append(kill_sender(fault.answered[len(killed)]))  # type: ignore[misc]
            resolved = len(killed) + len(fault.unanswered)  # the latter's sender gone already
            return fault.acted >= count and (not holding or resolved >= count)

        try:
            every = 0.01 if holding else 0.05
            if (
                poll(done, timeout, every_s=every, stop=self.stop) is None
                and not self.stop.is_set()
            ):
                killing = f", its answer came for {len(killed)}" if holding else ""
                raise BrokerFaultError(
                    f"the {options['api']} fault acted {fault.acted} of {count} times"
                    f"{killing} within {timeout:g}s ({fault.matched} matching requests)"
                )
        finally:
            self.proxy.remove_fault(fault)
        return {
            "api": options["api"],
            "action": options["action"],
            "clients": options["clients"],
            "nodes": nodes,
            "started": started,
            "ended": time.time(),
            "matched": fault.matched,
            "acted": fault.acted,
            **({"killed": killed, "unanswered": len(fault.unanswered)} if holding else {}),
            "requests": [
                {key: value for key, value in action.items() if key != "fault"}
                for action in self.proxy.actions
                if action["fault"] == id(fault)
            ],
            "leaders_before": before,
            "leaders_after": self.leaders(),
        }
