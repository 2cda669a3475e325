"""Helpers for the integration tests: real daqflow processes from real configuration files.

Every test gets a temporary directory (its configs, logs, summaries, and the working directory of
the processes it starts), a run registry of its own in it (DAQFLOW_RUNS_DB, which every daqflow it
starts inherits), ports from a block of 25000-29999 reserved for this test process, and cleanup
of every process it started, in tearDown and again at exit.

Environment (set by ctest): DAQFLOW = the daqflow binary, DAQFLOW_ROOT = the repository root.
"""

import atexit
import fcntl
import http.client as httpclient
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

ROOT = os.environ.get("DAQFLOW_ROOT") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(ROOT, "examples")

# Integration tests own 26000-29999 (blocks of 500, one per test process); the control unit
# tests use 25000-25999.
PORT_FIRST = 26000
PORT_LAST = 29999
PORT_BLOCK = 500

# A run registry for what runs outside a test's own (a class's set-up), removed at exit: no test
# reads or writes the registry of the user running the tests.
_REGISTRY_DIR = tempfile.mkdtemp(prefix="daqflow-registry-")
os.environ["DAQFLOW_RUNS_DB"] = os.path.join(_REGISTRY_DIR, "runs.sqlite")
atexit.register(shutil.rmtree, _REGISTRY_DIR, True)


def daqflow_binary():
    path = os.environ.get("DAQFLOW")
    if not path:
        raise RuntimeError("DAQFLOW is not set: run the integration tests through ctest, or set "
                           "DAQFLOW to the daqflow binary")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"DAQFLOW={path} is not an executable file")
    return path


class _Ports:
    """Hands out ports from a block reserved with a lock file, so that test processes running
    at the same time never share one; each port is checked free on 127.0.0.1 before use."""

    def __init__(self):
        self._lock = None
        self._base = None
        self._next = 0

    def _reserve(self):
        blocks = (PORT_LAST + 1 - PORT_FIRST) // PORT_BLOCK
        start = os.getpid() % blocks
        for i in range(blocks):
            block = (start + i) % blocks
            path = os.path.join(tempfile.gettempdir(), f"daqflow-test-ports-{block}.lock")
            f = open(path, "w")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                f.close()
                continue
            self._lock = f  # held until this process exits
            atexit.register(f.close)
            self._base = PORT_FIRST + block * PORT_BLOCK
            return
        raise RuntimeError("every port block of 26000-29999 is taken by other test processes")

    @staticmethod
    def _free(port, strict=False):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            # As daqflow's listeners do: an earlier test's connection lingering in TIME_WAIT does
            # not make a port busy (the kill tests leave hundreds), a listener does. Strict: for
            # other programs (sockperf, iperf3...), which may bind without SO_REUSEADDR and then
            # fail on a port that a closed connection still holds.
            if not strict:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
        return True

    def take(self, count=1, avoid=(), strict=False):
        """The first of `count` consecutive free ports, none of them in `avoid` (the ports a
        configuration already has: a port free now is not free once that configuration runs).
        The cursor goes round the block, so ports of processes that have ended are used again.
        strict: free even of connections in TIME_WAIT (ports for third-party servers)."""
        if self._base is None:
            self._reserve()
        for _ in range(PORT_BLOCK):
            if self._next + count > PORT_BLOCK:
                self._next = 0
            first = self._base + self._next
            self._next += count
            ports = range(first, first + count)
            if not any(p in avoid for p in ports) and all(self._free(p, strict) for p in ports):
                return first
        raise RuntimeError(f"no {count} free consecutive ports in "
                           f"{self._base}-{self._base + PORT_BLOCK - 1}")


PORTS = _Ports()

# Every process started by a test, so that none survives the test run.
_LIVE = []


def _stop(proc, grace=5.0):
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(5)


@atexit.register
def _stop_all():
    for proc in _LIVE:
        _stop(proc, grace=2.0)


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) counts as ended.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def pid_listening_on(port):
    """The pid of the process with a TCP socket listening on 127.0.0.1:port (or any address),
    from /proc, without asking the process anything; None when there is none (yet)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                    return int(pid)
            except OSError:
                continue
    return None


def read_example(name):
    with open(os.path.join(EXAMPLES, name)) as f:
        return f.read()


def example_files():
    return sorted(os.path.join(EXAMPLES, n) for n in os.listdir(EXAMPLES)
                  if n.endswith((".yaml", ".yml")))


def rewrite_ports(text):
    """Gives every distinct control_port and data_port of a configuration a fresh port of this
    test process (a data_port is a base: application i of the context listens on data_port + i,
    so it gets 8)."""
    mapping = {}
    taken = set()

    def repl(m):
        key, value = m.group(1), int(m.group(3))
        if value == 0:
            return m.group(0)
        if (key, value) not in mapping:
            count = 8 if key == "data_port" else 1
            first = PORTS.take(count, avoid=taken)
            taken.update(range(first, first + count))
            mapping[(key, value)] = first
        return f"{key}{m.group(2)}{mapping[(key, value)]}"

    return re.sub(r"\b(control_port|data_port)(\s*:\s*)(\d+)", repl, text)


def set_param(text, name, value):
    """Sets every occurrence of `name: <scalar>` (block or flow style) to value."""
    new, n = re.subn(rf"\b({re.escape(name)}\s*:\s*)[^,}}\n#]+", lambda m: m.group(1) + str(value),
                     text)
    if n == 0:
        raise AssertionError(f"the configuration has no '{name}' to change")
    return new


def set_bu_params(text, **params):
    """Adds parameters to every BU written in block style (examples/local.yaml)."""
    extra = "".join(f"\n        {k}: {v}" for k, v in params.items())
    new, n = re.subn(r"(\n      - type: bu\n        id: bu\d+\n        evm: evm0)",
                     lambda m: m.group(1) + extra, text)
    if n == 0:
        raise AssertionError("the configuration has no BU in block style")
    return new


# A BU's wait for a block's last part in runs that assert no incomplete event: a RU that a loaded
# host holds up longer than the default 2 s would otherwise show as one (a halt, which waits up to
# 10 s for open blocks, still ends).
PATIENT_BU_MS = 5000


def set_default_transport(text, transport):
    """Makes `transport` the default: rewrites `default:` under `transports:` (block or flow
    style), or adds a transports section."""
    flow = re.search(r"^transports\s*:\s*\{[^}]*\}", text, re.M)
    if flow:
        body = flow.group(0)
        if re.search(r"\bdefault\s*:", body):
            new_body = re.sub(r"\b(default\s*:\s*)[\w-]+", rf"\g<1>{transport}", body)
        else:
            new_body = body.replace("{", "{default: " + transport + ", ", 1)
        return text.replace(body, new_body)
    block = re.search(r"^transports\s*:\s*(#.*)?\n((?:[ \t]+.*\n|\s*\n)*)", text, re.M)
    if block:
        body = block.group(2)
        if re.search(r"^\s+default\s*:", body, re.M):
            new_body = re.sub(r"^(\s+default\s*:\s*)[\w-]+", rf"\g<1>{transport}", body, count=1,
                              flags=re.M)
        else:
            new_body = f"  default: {transport}\n" + body
        return text[:block.start(2)] + new_body + text[block.end(2):]
    return text.rstrip("\n") + f"\ntransports:\n  default: {transport}\n"


def control_ports(text):
    """The control_port of each context, in file order."""
    return [int(p) for p in re.findall(r"\bcontrol_port\s*:\s*(\d+)", text)]


def http(port, method, path, body=None, raw=None, timeout=5.0):
    """One request to 127.0.0.1:port; returns (status, parsed JSON or the text)."""
    conn = httpclient.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        headers = {"Content-Type": "application/json"} if data is not None else {}
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        text = resp.read().decode("utf-8", "replace")
        try:
            return resp.status, json.loads(text) if text else None
        except ValueError:
            return resp.status, text
    finally:
        conn.close()


def wait_until(predicate, timeout, what, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class DaqflowTestCase(unittest.TestCase):
    """A temporary directory and process cleanup for each test; logs of the processes a failed
    test started are printed."""

    def setUp(self):
        self.binary = daqflow_binary()
        self.dir = tempfile.mkdtemp(prefix=f"daqflow-{self.id().split('.')[-1]}-")
        self.registry = os.path.join(self.dir, "runs.sqlite")
        os.environ["DAQFLOW_RUNS_DB"] = self.registry
        self.procs = []
        self.addCleanup(self._cleanup)

    def _cleanup(self):
        for proc, _ in self.procs:
            _stop(proc)
            if proc in _LIVE:
                _LIVE.remove(proc)
        if self._failed():
            for root, _, files in os.walk(self.dir):
                for name in sorted(files):
                    if name.endswith(".log"):
                        path = os.path.join(root, name)
                        with open(path, errors="replace") as f:
                            print(f"\n--- {path} (last 40 lines) ---\n" +
                                  "".join(f.readlines()[-40:]))
        if self._failed() and os.environ.get("DAQFLOW_KEEP_FAILED"):
            print(f"\n--- kept {self.dir} (DAQFLOW_KEEP_FAILED) ---")
            return
        shutil.rmtree(self.dir, ignore_errors=True)

    def _failed(self):
        """Whether this test has failed so far (cleanups run before the result is final)."""
        outcome = self._outcome
        if outcome is None:
            return False
        if not getattr(outcome, "success", True):
            return True
        result = getattr(outcome, "result", None)
        marked = getattr(result, "failures", []) + getattr(result, "errors", [])
        return any(test is self for test, _ in marked)

    def path(self, name):
        return os.path.join(self.dir, name)

    def write_config(self, name, text):
        path = self.path(name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def start(self, args, log_name, env=None):
        """Starts `daqflow ARGS` in its own session, output to a log file in the test dir; `env`
        adds variables to the environment it inherits."""
        log = open(self.path(log_name), "w")
        proc = subprocess.Popen([self.binary] + args, cwd=self.dir, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env=None if env is None else {**os.environ, **env})
        log.close()
        self.procs.append((proc, self.path(log_name)))
        _LIVE.append(proc)
        return proc

    def start_polled_run(self, text, config_name):
        """`daqflow run` of the configuration `text` until stopped (summary.json, logs/ and
        run.log in the test dir). Returns the process, the control port of each context by name,
        and a function giving a metric of the EVM evm0 (events_built unless named; -1 while it does
        not answer), which fails the test if the run has ended."""
        names = re.findall(r"-\s*name:\s*(\S+)", text)
        ports = [int(p) for p in re.findall(r"control_port\s*:\s*(\d+)", text)]
        control = dict(zip(names, ports))
        run = self.start(["run", self.write_config(config_name, text), "--duration", "0",
                          "--summary", self.path("summary.json"), "--log-dir",
                          self.path("logs")], "run.log")

        def built(metric="events_built"):
            self.assertIsNone(run.poll(), self.output_of("run.log"))
            try:
                status, body = http(control["evm"], "GET", "/api/v1/apps/evm0", timeout=2.0)
            except OSError:
                return -1
            return body["metrics"].get(metric, 0) if status == 200 else -1
        return run, control, built

    def kill_context(self, port):
        """SIGKILL of the executive answering on control port `port`; returns its pid."""
        status, ctx = http(port, "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)
        return ctx["pid"]

    def lose_bu_mid_run(self, text, config_name, before, after=3000, bu="bu2"):
        """Runs `text`, kills `bu` once `before` events are built, waits for the controller's
        salvage of its files and `after` more events, and stops the run; returns the summary's
        results."""
        run, control, built = self.start_polled_run(text, config_name)
        wait_until(lambda: built() >= before, 90, f"{before} events built")
        self.kill_context(control[bu])
        wait_until(lambda: f"{bu}: salvaged" in self.output_of("run.log"), 60,
                   f"the controller to salvage {bu}'s files")
        at_salvage = built()
        wait_until(lambda: built() >= at_salvage + after, 60, f"{after} more events built")
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        with open(self.path("summary.json")) as f:
            return json.load(f)["results"]

    def stop_run(self, proc, timeout=90):
        """Stops a `daqflow run` started with --duration 0 as Ctrl-C would: it halts every
        application, writes its summary and exits; returns its exit code. A test that waits for
        something during a run starts it with --duration 0 and stops it once it has seen it, so
        that the run's clock never races the test's waits."""
        proc.send_signal(signal.SIGINT)
        return proc.wait(timeout)

    def output_of(self, log_name):
        with open(self.path(log_name), errors="replace") as f:
            return f.read()

    def wait_for_restart(self, context, log_name="run.log", timeout=60):
        """Waits for the controller to say that the context's first restart rejoined the run; a
        timeout shows what the controller said meanwhile."""
        line = f"context {context} restarted (1 of 5) and rejoins the run"
        try:
            wait_until(lambda: line in self.output_of(log_name), timeout,
                       f"{context} to be started again")
        except AssertionError as e:
            said = [l for l in self.output_of(log_name).splitlines()
                    if l.startswith("daqflow run:")]
            raise AssertionError(f"{e}; the controller said:\n" + "\n".join(said[-40:])) from e

    def daqflow(self, args, timeout=60):
        """Runs `daqflow ARGS` to completion; returns (exit code, stdout + stderr)."""
        try:
            done = subprocess.run([self.binary] + args, cwd=self.dir, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=timeout,
                                  start_new_session=True)
        except subprocess.TimeoutExpired as e:
            # subprocess.run kills the direct child; `daqflow run`'s executives follow it
            # (they get SIGTERM when their parent dies).
            raise AssertionError(f"daqflow {' '.join(args)} did not end within {timeout} s; "
                                 f"output:\n{e.output.decode(errors='replace') if e.output else ''}")
        return done.returncode, done.stdout.decode("utf-8", "replace")

    def run_config(self, config_path, *extra, timeout=120, logs="logs"):
        """`daqflow run CONFIG --summary S --log-dir L EXTRA`; returns (code, output, summary).
        A test that runs several times gives each run its own `logs` folder, so that a failed
        run's logs are not overwritten by the next run's before they are printed."""
        summary = self.path("summary.json")
        if os.path.exists(summary):
            os.remove(summary)
        code, out = self.daqflow(["run", config_path, "--summary", summary, "--log-dir",
                                  self.path(logs)] + list(extra), timeout=timeout)
        data = None
        if os.path.exists(summary):
            with open(summary) as f:
                data = json.load(f)
        return code, out, data

    def start_exec(self, example, transport="inproc"):
        """Starts `daqflow exec` for every context of an example (rewritten ports, transport),
        waits for the control ports and returns (process, {context: {"port", "apps": {id: type}}})."""
        text = set_default_transport(rewrite_ports(read_example(example)), transport)
        config = self.write_config(example, text)
        # Context names: the `- name:` entries (block style) or `{name: ...}` (flow style).
        names = re.findall(r"^\s*-\s*name\s*:\s*([\w.-]+)", text, re.M)
        names += re.findall(r"\{\s*name\s*:\s*([\w.-]+)", text)
        args = ["exec", config]
        for name in names:
            args += ["--context", name]
        proc = self.start(args, "exec.log")
        found = {}
        for port in control_ports(text):
            self.wait_http(port, proc)
            status, ctx = http(port, "GET", "/api/v1/context")
            self.assertEqual(status, 200, ctx)
            found[ctx["name"]] = {"port": port,
                                  "apps": {a["id"]: a["type"] for a in ctx["applications"]}}
        self.assertEqual(sorted(found), sorted(names), "every context of the file answers")
        return proc, found

    def wait_http(self, port, proc=None, timeout=15.0):
        """Waits until 127.0.0.1:port answers GET /api/v1/context."""
        def answered():
            if proc is not None and proc.poll() is not None:
                raise AssertionError(f"process exited with {proc.returncode} before port {port} "
                                     "answered")
            try:
                status, _ = http(port, "GET", "/api/v1/context", timeout=1.0)
                return status == 200
            except OSError:
                return False
        wait_until(answered, timeout, f"the control port {port}")

    def wait_app_state(self, port, app, state, timeout=15.0):
        last = {}

        def reached():
            status, body = http(port, "GET", f"/api/v1/apps/{app}")
            self.assertEqual(status, 200, body)
            last["body"] = body
            self.assertNotEqual(body["state"], "Failed",
                                f"{app} failed: {body.get('reason')}")
            return body["state"] == state
        try:
            wait_until(reached, timeout, f"application {app} in state {state}")
        except AssertionError as e:
            raise AssertionError(f"{e}; last answer: {last.get('body')}")
        return last["body"]
