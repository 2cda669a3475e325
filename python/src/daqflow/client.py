"""Control from Python: the HTTP/JSON control API of daqflow's executives, and runs.

``Executive`` talks to one executive by address; ``Cluster`` to every context of a
configuration file, driving transitions in the order ``daqflow run`` does (enable ranks);
``start``/``run`` run a configuration with the CLI that came with this package. Errors the
server answers are raised as ControlError with its HTTP status and message.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Union

from ._cli import executable as cli_executable

if TYPE_CHECKING:
    import pandas

PathLike = Union[str, "os.PathLike[str]"]
Json = Any

#: The states every application goes through (``Mixed``: a context's applications differ).
STATES = ("Halted", "Configuring", "Ready", "Enabling", "Enabled", "Suspending", "Suspended",
          "Resuming", "Halting", "Failed")


class ControlError(Exception):
    """The server refused or failed a request: its HTTP status (0: it could not be reached)
    and its message."""

    def __init__(self, status: int, message: str, url: str = "") -> None:
        super().__init__(f"{url}: {status} {message}" if url else f"{status} {message}")
        self.status = status
        self.message = message
        self.url = url


class RunError(Exception):
    """``daqflow run`` ended with a failure: its exit status, its summary when it wrote one,
    and the last lines it printed."""

    def __init__(self, returncode: int, summary: Optional[dict[str, Json]], output: str) -> None:
        tail = "\n".join(output.splitlines()[-20:])
        super().__init__(f"daqflow run exited with status {returncode}:\n{tail}")
        self.returncode = returncode
        self.summary = summary
        self.output = output


class Executive:
    """One executive's control API (``host:port`` or ``http://host:port``)."""

    def __init__(self, address: str, token: Optional[str] = None, timeout: float = 10.0) -> None:
        self.url = address if "://" in address else f"http://{address}"
        self.url = self.url.rstrip("/")
        self.token = token if token is not None else os.environ.get("DAQFLOW_TOKEN")
        self.timeout = timeout

    def request(self, method: str, path: str, body: Optional[Json] = None,
                query: Optional[dict[str, Any]] = None) -> Json:
        """One request; the answer's JSON. Raises ControlError."""
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as answer:
                text = answer.read().decode()
        except urllib.error.HTTPError as e:
            raw = e.read().decode(errors="replace")
            try:
                message = str(json.loads(raw).get("error", raw))
            except ValueError:
                message = raw
            raise ControlError(e.code, message, url) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ControlError(0, f"cannot reach the executive: {reason}", url) from None
        return json.loads(text) if text else None

    # What the executive is.
    def context(self) -> dict[str, Json]:
        result: dict[str, Json] = self.request("GET", "/api/v1/context")
        return result

    @property
    def state(self) -> str:
        """The context's state: its applications' common one, ``Mixed`` or ``Failed``."""
        return str(self.context()["state"])

    def apps(self) -> list[dict[str, Json]]:
        result: list[dict[str, Json]] = self.request("GET", "/api/v1/apps")
        return result

    def app(self, app_id: str) -> dict[str, Json]:
        """One application: state, reason, params, metrics, results."""
        result: dict[str, Json] = self.request("GET", f"/api/v1/apps/{quote(app_id)}")
        return result

    # Transitions.
    def command(self, command: str, app: Optional[str] = None,
                run_key: Optional[str] = None) -> dict[str, Json]:
        """Configure, Enable, Suspend, Resume, Halt or Reset: every application of the context,
        or one. Returns at once (the answer names the transitional state): see wait_for."""
        path = f"/api/v1/apps/{quote(app)}/fsm/{command}" if app else f"/api/v1/fsm/{command}"
        body = {"run_key": run_key} if run_key else None
        result: dict[str, Json] = self.request("POST", path, body)
        return result

    def wait_for(self, state: str, timeout: float = 60.0, app: Optional[str] = None) -> None:
        """Until the context (or one application) is in ``state``; raises ControlError naming
        the reason when an application fails, TimeoutError after ``timeout`` seconds."""
        _check_state(state)
        deadline = time.monotonic() + timeout
        while True:
            apps = [self.app(app)] if app else self.apps()
            failed = [a for a in apps if a["state"] == "Failed" and state != "Failed"]
            if failed:
                reasons = "; ".join(f"{a['id']}: {a.get('reason', '')}" for a in failed)
                raise ControlError(409, f"failed while waiting for {state}: {reasons}", self.url)
            if apps and all(a["state"] == state for a in apps):
                return
            if time.monotonic() > deadline:
                states = ", ".join(f"{a['id']} {a['state']}" for a in apps)
                raise TimeoutError(f"{self.url}: not {state} after {timeout} s ({states})")
            time.sleep(0.05)

    # Parameters, actions.
    def params(self, app_id: str) -> dict[str, Json]:
        result: dict[str, Json] = self.app(app_id)["params"]
        return result

    def set_params(self, app_id: str, **params: Json) -> dict[str, Json]:
        """Changes parameters (while Halted or Ready); returns them all."""
        result: dict[str, Json] = self.request(
            "PUT", f"/api/v1/apps/{quote(app_id)}/params", params)["params"]
        return result

    def action(self, app_id: str, name: str, **arguments: Json) -> Json:
        return self.request("POST", f"/api/v1/apps/{quote(app_id)}/actions/{quote(name)}",
                            arguments)["result"]

    # Monitoring.
    def snapshot(self) -> dict[str, Json]:
        result: dict[str, Json] = self.request("GET", "/api/v1/snapshot")
        return result

    def metrics(self) -> list[dict[str, Json]]:
        """Every metric of every application: rows of context, app, type, state, name, kind,
        unit, value."""
        snap = self.snapshot()
        return [
            {"context": snap["context"], "app": a["id"], "type": a["type"], "state": a["state"],
             **m}
            for a in snap["applications"]
            for m in a["metrics"]
        ]

    def metrics_frame(self) -> pandas.DataFrame:
        """metrics() as a pandas DataFrame (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.metrics())

    def history(self, app: str, metric: str, since_ms: int = 0) -> tuple[list[int], list[float]]:
        """One series of the metrics history: times (unix ms) and values."""
        h = self.request("GET", "/api/v1/history",
                         query={"app": app, "metric": metric, "since": since_ms})
        return list(h["t"]), list(h["v"])

    def history_frame(self, app: str, metric: str, since_ms: int = 0) -> pandas.DataFrame:
        """history() as a DataFrame indexed by time (needs pandas)."""
        import pandas as pd

        t, v = self.history(app, metric, since_ms)
        return pd.DataFrame({metric: v}, index=pd.to_datetime(t, unit="ms", utc=True))

    def logs(self, app: Optional[str] = None, level: Optional[str] = None,
             since_ms: Optional[int] = None) -> list[dict[str, Json]]:
        """The process's last log lines: t, level, logger, text."""
        result: list[dict[str, Json]] = self.request(
            "GET", "/api/v1/logs", query={"app": app, "level": level, "since": since_ms})["lines"]
        return result

    def runs(self, state: Optional[str] = None, limit: Optional[int] = None) -> list[dict[str, Json]]:
        """The run registry as this executive reaches it, newest first."""
        result: list[dict[str, Json]] = self.request(
            "GET", "/api/v1/runs", query={"state": state, "limit": limit})["runs"]
        return result

    def shutdown(self) -> None:
        """Halts what runs and ends the process."""
        self.request("POST", "/api/v1/shutdown")

    def __repr__(self) -> str:
        return f"Executive({self.url!r})"


@dataclass(frozen=True)
class App:
    """An application of a configuration: its id, type, enable rank and context."""

    id: str
    type: str
    rank: int
    context: str


@dataclass
class Cluster:
    """Every context of a configuration file (as ``daqflow check --json`` reads it)."""

    config: str
    executives: dict[str, Executive] = field(default_factory=dict)
    apps: list[App] = field(default_factory=list)

    @classmethod
    def from_config(cls, config: PathLike, token: Optional[str] = None,
                    timeout: float = 10.0) -> Cluster:
        path = os.fspath(config)
        out = subprocess.run([cli_executable(), "check", "--json", path], capture_output=True,
                             text=True, check=False)
        try:
            layout = json.loads(out.stdout.splitlines()[0])
        except (IndexError, ValueError):
            raise ValueError(f"{path}: daqflow check said: {out.stderr or out.stdout}") from None
        if not layout.get("ok"):
            raise ValueError(layout.get("error", f"{path}: invalid"))
        if token is None and layout.get("token_file"):
            token_file = os.path.join(os.path.dirname(os.path.abspath(path)), layout["token_file"])
            with open(token_file) as f:
                token = f.read().strip()
        cluster = cls(path)
        for ctx in layout["contexts"]:
            cluster.executives[ctx["name"]] = Executive(
                f"{ctx['host']}:{ctx['control_port']}", token, timeout)
            cluster.apps += [App(a["id"], a["type"], a["rank"], ctx["name"])
                             for a in ctx["applications"]]
        return cluster

    def executive_of(self, app_id: str) -> Executive:
        for a in self.apps:
            if a.id == app_id:
                return self.executives[a.context]
        raise KeyError(f"{self.config}: no application {app_id!r}")

    @property
    def state(self) -> str:
        """The contexts' common state, ``Mixed``, or ``Failed`` when any failed."""
        states = {e.state for e in self.executives.values()}
        if "Failed" in states:
            return "Failed"
        return states.pop() if len(states) == 1 else "Mixed"

    def wait_for(self, state: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        for e in self.executives.values():
            e.wait_for(state, max(0.0, deadline - time.monotonic()))

    def configure(self, timeout: float = 60.0) -> None:
        run_key = os.urandom(8).hex()
        for e in self.executives.values():
            e.command("Configure", run_key=run_key)
        self.wait_for("Ready", timeout)

    def enable(self, timeout: float = 60.0) -> None:
        """Enables the applications rank by rank, lowest first (consumers before producers)."""
        self._by_rank("Enable", "Enabled", sorted(self._ranks()), timeout)

    def halt(self, timeout: float = 60.0) -> None:
        """Halts the applications rank by rank, highest first (producers before consumers)."""
        self._by_rank("Halt", "Halted", sorted(self._ranks(), reverse=True), timeout)

    def _ranks(self) -> set[int]:
        return {a.rank for a in self.apps}

    def _by_rank(self, command: str, state: str, ranks: Iterable[int], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for rank in ranks:
            group = [a for a in self.apps if a.rank == rank]
            for a in group:
                self.executives[a.context].command(command, app=a.id)
            for a in group:
                self.executives[a.context].wait_for(
                    state, max(0.0, deadline - time.monotonic()), app=a.id)

    def metrics(self) -> list[dict[str, Json]]:
        return [row for e in self.executives.values() for row in e.metrics()]

    def metrics_frame(self) -> pandas.DataFrame:
        """Every application's metrics in one DataFrame (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.metrics())

    def history_frame(self, app: str, metric: str, since_ms: int = 0) -> pandas.DataFrame:
        return self.executive_of(app).history_frame(app, metric, since_ms)

    def logs(self, app: str, level: Optional[str] = None) -> list[dict[str, Json]]:
        return self.executive_of(app).logs(app, level)

    def shutdown(self) -> None:
        for e in self.executives.values():
            e.shutdown()


class Run:
    """A configuration run by ``daqflow run`` in the background (``start``)."""

    def __init__(self, config: PathLike, args: Sequence[str]) -> None:
        self.config = os.fspath(config)
        self._dir = tempfile.TemporaryDirectory(prefix="daqflow-run-")
        self.summary_path = os.path.join(self._dir.name, "summary.json")
        self._log = open(os.path.join(self._dir.name, "output.log"), "w+")
        env = dict(os.environ)
        env.setdefault("DAQFLOW_PYTHON", sys.executable)
        self.process = subprocess.Popen(
            [cli_executable(), "run", self.config, "--summary", self.summary_path, *args],
            stdout=self._log, stderr=subprocess.STDOUT, env=env)
        self._cluster: Optional[Cluster] = None

    @property
    def cluster(self) -> Cluster:
        if self._cluster is None:
            self._cluster = Cluster.from_config(self.config)
        return self._cluster

    def output(self) -> str:
        """What ``daqflow run`` printed so far."""
        self._log.flush()
        with open(self._log.name) as f:
            return f.read()

    def stop(self) -> None:
        """Asks the controller to halt the run (as Ctrl-C would)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)

    def wait(self, timeout: Optional[float] = None) -> dict[str, Json]:
        """The run's summary once it ended; RunError when it failed."""
        try:
            returncode = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"daqflow run {self.config} still running after {timeout} s") from None
        summary: Optional[dict[str, Json]] = None
        if os.path.exists(self.summary_path):
            with open(self.summary_path) as f:
                summary = json.load(f)
        output = self.output()
        self._log.close()
        self._dir.cleanup()
        if returncode != 0 or summary is None:
            raise RunError(returncode, summary, output)
        return summary

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.stop()
            self.process.wait()
        self._log.close()
        self._dir.cleanup()


def start(config: PathLike, duration: Optional[float] = None, *args: str) -> Run:
    """Runs the configuration in the background with ``daqflow run`` (until stopped, or for
    ``duration`` seconds); extra arguments go to ``daqflow run``."""
    extra = list(args)
    if duration is not None:
        extra = ["--duration", str(duration), *extra]
    return Run(config, extra)


def run(config: PathLike, duration: Optional[float] = None, *args: str,
        timeout: Optional[float] = None) -> dict[str, Json]:
    """Runs the configuration to its end (``duration`` seconds, or until its sources finish)
    and returns the run's summary; RunError when it failed."""
    return start(config, duration, *args).wait(timeout)


def quote(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def _check_state(state: str) -> None:
    if state not in STATES:
        raise ValueError(f"{state!r} is not a state: {', '.join(STATES)}")
