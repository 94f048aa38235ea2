"""Toxiproxy in front of each broker: the network faults clients cannot go around.

Shopify's Toxiproxy is a TCP proxy whose "toxics" add latency, limit bandwidth, swallow data
or reset connections, per direction, while it runs. The harness builds its server once from
the Go module proxy (a pinned version, cached beside Kafka's jars) and runs one server per
cluster on loopback. Each broker gets a client listener that it advertises at its proxy's
address, so every connection a client opens, including the ones metadata sends it to, passes
through that broker's proxy; the brokers' own traffic (replication, the KRaft quorum) and the
harness's observers use the direct listener and are untouched.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from kafka_replay.servers.built_tools import built_once
from kafka_replay.servers.paths import cache_root
from kafka_replay.servers.ports import free_ports
from kafka_replay.servers.process import spawn
from kafka_replay.servers.reaper import Lease

from .errors import ClusterError

log = logging.getLogger(__name__)

VERSION = "2.12.0"
#: Toxiproxy 2.12 needs Go 1.23; this release of Go is fetched when the machine has none.
MIN_GO = (1, 23)
GO_TOOLCHAIN = "v0.0.1-go1.23.4.linux-amd64"
MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
#: A toxiproxy-server binary to use instead of building one.
BINARY_ENV = "KAFKA_REPLAY_TOXIPROXY"
BUILD_TIMEOUT_S = 900.0
START_TIMEOUT_S = 15.0
API_TIMEOUT_S = 5.0
#: Toxiproxy's names for the two directions: client to broker, broker to client.
STREAMS = {"to_broker": "upstream", "from_broker": "downstream"}


class ToxiproxyError(ClusterError):
    """Toxiproxy could not be built, started or asked to do something."""


def toxiproxy_binary() -> Path:
    """The server binary: ``$KAFKA_REPLAY_TOXIPROXY``, or built once with ``go install``."""
    binary = cache_root() / "toxiproxy" / VERSION / "toxiproxy-server"
    return built_once(binary, BINARY_ENV, _build, ToxiproxyError)


def _go_version(go: str) -> tuple[int, int]:
    try:
        said = subprocess.run([go, "version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return (0, 0)
    found = re.search(r"go(\d+)\.(\d+)", said)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def find_go() -> str:
    """A Go of at least :data:`MIN_GO`: the machine's, else Go's own release from the Go module
    proxy (where ``go`` itself fetches toolchains), fetched once into the cache."""
    for go in (shutil.which("go"), "/usr/local/go/bin/go"):
        if go and _go_version(go) >= MIN_GO:
            return go
    home = cache_root() / "go" / GO_TOOLCHAIN
    go = home / "bin" / "go"
    if not go.exists():
        log.warning("fetching Go (%s) from the Go module proxy to build Toxiproxy", GO_TOOLCHAIN)
        url = f"https://proxy.golang.org/golang.org/toolchain/@v/{GO_TOOLCHAIN}.zip"
        with tempfile.TemporaryDirectory(prefix="kafka-replay-go-") as scratch:
            archive = Path(scratch) / "go.zip"
            try:
                urllib.request.urlretrieve(url, archive)
            except OSError as exc:
                raise ToxiproxyError(
                    f"network faults need Toxiproxy, built with Go {MIN_GO[0]}.{MIN_GO[1]} or "
                    f"newer; there is none here and {url} could not be fetched ({exc}); install "
                    f"Go, or set {BINARY_ENV} to a toxiproxy-server {VERSION} binary"
                ) from exc
            with zipfile.ZipFile(archive) as zipped:
                prefix = f"golang.org/toolchain@{GO_TOOLCHAIN}/"
                for member in zipped.infolist():
                    if member.filename.startswith(prefix) and not member.is_dir():
                        target = Path(scratch) / "go" / member.filename.removeprefix(prefix)
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(zipped.read(member))
                        target.chmod(0o755)  # the zip keeps no modes; its tools must run
            home.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(Path(scratch) / "go"), home)
    return str(go)


def _build(binary: Path) -> None:
    go = find_go()
    log.warning("building Toxiproxy %s once with %s (about a minute)", VERSION, go)
    with tempfile.TemporaryDirectory(prefix="kafka-replay-toxiproxy-") as scratch:
        env = {
            **os.environ,
            "GOBIN": scratch,
            "GOFLAGS": "-mod=mod",
            "CGO_ENABLED": "0",
            "GOTOOLCHAIN": "local",
        }
        try:
            built = subprocess.run(
                [go, "install", f"{MODULE}@v{VERSION}"],
                env=env,
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as exc:
            raise ToxiproxyError(
                f"building Toxiproxy {VERSION} took over {BUILD_TIMEOUT_S:.0f}s"
            ) from exc
        if built.returncode != 0:
            tail = "\n".join((built.stdout + built.stderr).splitlines()[-20:])
            raise ToxiproxyError(f"`go install {MODULE}@v{VERSION}` failed:\n{tail}")
        shutil.move(str(Path(scratch) / "server"), binary)


class Toxiproxy:
    """One running Toxiproxy server and the proxies it holds, driven through its HTTP API."""

    def __init__(self, lease: Lease, log_path: Path, seed: int = 0) -> None:
        self.lease, self.log_path, self.seed = lease, log_path, seed
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0

    def start(self) -> Toxiproxy:
        """Start the server on a free loopback port; wait until its API answers."""
        binary = toxiproxy_binary()
        (self.port,) = free_ports(1)
        command = [str(binary), "-host", "127.0.0.1", "-port", str(self.port)]
        with self.log_path.open("ab") as output:
            self.process = spawn([*command, "-seed", str(self.seed)], output, self.lease)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                self._call("GET", "/version")
                return self
            except ToxiproxyError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    tail = self.log_path.read_text(errors="replace")[-2000:]
                    self.stop()
                    raise ToxiproxyError(
                        f"Toxiproxy did not start on 127.0.0.1:{self.port}; its log "
                        f"{self.log_path}:\n{tail}"
                    ) from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def route(self, routes: dict[str, tuple[int, int]]) -> None:
        """Proxies ``name -> (listen port, upstream port)`` on 127.0.0.1, replacing any others."""
        for name in self.proxies():
            self._call("DELETE", f"/proxies/{name}")
        for name, (listen, upstream) in routes.items():
            addresses = {"listen": f"127.0.0.1:{listen}", "upstream": f"127.0.0.1:{upstream}"}
            self._call("POST", "/proxies", {"name": name, **addresses})

    def proxies(self) -> dict[str, dict[str, Any]]:
        """Every proxy with its state (``enabled``, ``toxics``), by name."""
        return self._call("GET", "/proxies") or {}

    def add_toxic(
        self, proxy: str, name: str, kind: str, direction: str, attributes: dict[str, Any]
    ) -> None:
        """Add one toxic (``latency``, ``bandwidth``, ``timeout``, ``reset_peer``...)."""
        body = {
            "name": name,
            "type": kind,
            "stream": STREAMS[direction],
            "toxicity": 1.0,
            "attributes": attributes,
        }
        self._call("POST", f"/proxies/{proxy}/toxics", body)

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def set_enabled(self, proxy: str, enabled: bool) -> None:
        """A disabled proxy closes its connections and refuses new ones: a cut-off broker."""
        self._call("POST", f"/proxies/{proxy}", {"enabled": enabled})

    def faulty(self) -> bool:
        """Whether any proxy has a toxic or is disabled."""
        return any(not p["enabled"] or p["toxics"] for p in self.proxies().values())

    def reset(self) -> None:
        """Every proxy enabled again, every toxic removed."""
        self._call("POST", "/reset")

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
        try:
            with opener.open(request, timeout=API_TIMEOUT_S) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace").strip()
            raise ToxiproxyError(f"Toxiproxy refused {method} {path}: {detail}") from exc
        except OSError as exc:
            raise ToxiproxyError(f"Toxiproxy did not answer {method} {path}: {exc}") from exc
        return json.loads(text) if text.strip() else None
