"""The two-stage event builder with real processes (docs/event-builder.md): examples/local.yaml,
one process per context over TCP. A clean run keeps the accounting invariant and writes what it
builds; then the failure matrix of docs/reliability.md, a test per row: BUs killed (also while
writing, and settled by `daqflow salvage`), frozen, cut off from the EVM, slowed, on a full or
failing disk, or refusing a corrupted message; RUs killed, frozen, cut off and slowed; the EVM
frozen; the controller killed. Links are cut, slowed and corrupted by the configuration's `faults`. Every
row that writes files checks them with `daqflow dump --events`: no event twice.

ctest runs the module's two classes side by side (tests/CMakeLists.txt names them: a class added
here is named there too). Ports: this module takes its own block of 30000-32767 (the
event-builder tests' range)."""

import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from daqflow_testlib import (PATIENT_BU_MS, DaqflowTestCase, http, pid_alive, pid_listening_on,
                             read_example, set_bu_params, set_param, wait_until)

PORT_FIRST = 30000
PORT_LAST = 32767  # below the kernel's ephemeral ports (32768 and up)
PORT_BLOCK = 100


class _Ports:
    """Blocks of 100 ports of 30000-32767, reserved with a lock file per test process; a process
    that uses one up takes the next free block."""

    def __init__(self):
        self._locks = []
        self._base = None
        self._next = 0

    def _take_block(self):
        blocks = (PORT_LAST + 1 - PORT_FIRST) // PORT_BLOCK
        for i in range(blocks):
            block = (os.getpid() + i) % blocks
            f = open(os.path.join(tempfile.gettempdir(), f"daqflow-evb-ports-{block}.lock"), "w")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                f.close()
                continue
            self._locks.append(f)
            self._base, self._next = PORT_FIRST + block * PORT_BLOCK, 0
            return
        raise RuntimeError("every port block of 30000-32767 is taken")

    def take(self, count):
        if self._base is None:
            self._take_block()
        while True:
            while self._next + count <= PORT_BLOCK:
                first = self._base + self._next
                self._next += count
                if all(_free(p) for p in range(first, first + count)):
                    return first
            self._take_block()


def _free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


PORTS = _Ports()


def local_config(**bu_params):
    """examples/local.yaml with fresh ports and extra BU parameters (flow style); the BUs wait
    PATIENT_BU_MS for a block's last part (timeout_ms) unless told otherwise."""
    bu_params.setdefault("timeout_ms", PATIENT_BU_MS)
    text = read_example("local.yaml")
    mapping = {}

    def port(m):
        key, value = m.group(1), int(m.group(3))
        if (key, value) not in mapping:
            mapping[(key, value)] = PORTS.take(1)
        return f"{key}{m.group(2)}{mapping[(key, value)]}"
    text = re.sub(r"\b(control_port|data_port)(\s*:\s*)(\d+)", port, text)
    return set_bu_params(text, **bu_params)


def contexts_of(text):
    """[(name, control_port)] in file order."""
    return [(m.group(1), int(m.group(2))) for m in
            re.finditer(r"- name: (\w+)\n\s+host: [\d.]+\n\s+control_port: (\d+)", text)]


class _EventBuilderRuns(DaqflowTestCase):
    """What the event-builder tests share: runs of examples/local.yaml, their control ports and
    files. Its tests are in two classes that ctest runs side by side."""

    def app(self, port, app_id):
        status, body = http(port, "GET", f"/api/v1/apps/{app_id}")
        self.assertEqual(status, 200, body)
        return body

    def built(self, port):
        return self.app(port, "evm0")["metrics"].get("events_built", 0)

    def _start_by_hand(self, text):
        """Every context of text started with `daqflow exec`, configured and enabled in order,
        as an operator without `daqflow run` would; returns (procs, ports, command)."""
        config = self.write_config("local.yaml", text)
        contexts = contexts_of(text)
        self.assertEqual(len(contexts), 6)
        procs = {name: self.start(["exec", config, "--context", name], f"{name}.log")
                 for name, _ in contexts}
        ports = dict(contexts)
        for name, port in contexts:
            self.wait_http(port, procs[name])

        def command(names, cmd, state):
            for n in names:
                status, body = http(ports[n], "POST", f"/api/v1/fsm/{cmd}")
                self.assertEqual(status, 202, body)
            for n in names:
                app = n if n != "evm" else "evm0"
                self.wait_app_state(ports[n], app, state, timeout=30)

        command(list(ports), "Configure", "Ready")
        command(["bu1", "bu2"], "Enable", "Enabled")
        command(["ru1", "ru2", "ru3"], "Enable", "Enabled")
        command(["evm"], "Enable", "Enabled")
        return procs, ports, command, config

    def _start_small_events_run(self, evm_params, text=None, extra_args=()):
        """local.yaml with small fragments, files in run-data and extra EVM parameters, run
        until stopped; returns (run, control ports)."""
        if text is None:
            text = set_param(local_config(), "dir", self.path("run-data"))
        text = set_param(text, "mean", 256)
        text = set_param(text, "sd", 128)
        extra = "".join(f"\n        {k}: {v}" for k, v in evm_params.items())
        text = text.replace("bus: [bu1, bu2]", "bus: [bu1, bu2]" + extra, 1)
        config = self.write_config("local.yaml", text)
        run = self.start(["run", config, "--duration", "0", "--status-interval", "0.5",
                          "--summary", self.path("summary.json"), "--log-dir",
                          self.path("logs")] + list(extra_args), "run.log")
        return run, dict(contexts_of(text))

    def _assert_every_event_once_on_disk(self, dirs, built, count=None):
        """Events 0..built-1 on disk once each; without built, count distinct events."""
        numbers = []
        for d in dirs:
            code, dump = self.daqflow(["dump", d, "--json", "--events"])
            self.assertEqual(code, 0, dump)
            report = json.loads(dump)
            self.assertTrue(report["all_verified"], dump[:2000])
            self.assertFalse([n for n in os.listdir(d) if n.endswith(".part")])
            numbers += [e["event"] for f in report["files"] for e in f["event_list"]]
        if built is None:
            self.assertEqual(len(numbers), len(set(numbers)), "no event twice on disk")
            self.assertEqual(len(numbers), count, "every event counted written is on disk")
            return
        self.assertEqual(sorted(numbers), list(range(built)), "every event once, on disk")

    def _reset_bu2_link(self, fault, what):
        """A run (files written) with this reset `fault` on a link of bu2: bu2 leaves and
        rejoins, builds again, halts normally, and nothing is incomplete, lost, left in doubt or
        written twice. Returns bu2's log."""
        text = set_param(local_config(), "dir", self.path("run-data"))
        text += "faults:\n  - " + fault + "\n"
        run, ports = self._start_small_events_run({"trigger_rate_hz": 1000}, text)
        evm = ports["evm"]
        wait_until(lambda: self._built_or_none(evm) >= 100, 60, "100 events built")
        wait_until(lambda: self.app(evm, "evm0")["results"]["rejoined_bus"] == ["bu2"], 60,
                   f"bu2 to rejoin after {what} was reset")
        bu2_before = self.app(ports["bu2"], "bu2")["results"]["events_built"]
        wait_until(lambda: self.app(ports["bu2"], "bu2")["results"]["events_built"]
                   >= bu2_before + 500, 60, "bu2 to build again")
        summary = self._stopped_run_summary(run)
        self.assertEqual(summary["applications"]["bu2"]["state"], "Halted", summary)
        r = summary["results"]
        self.assertEqual(r["lost_bus"], ["bu2"], r)
        self.assertEqual(r["rejoined_bus"], ["bu2"], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_in_doubt"], 0, r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self.assertEqual(r["events_written"], r["events_built"], r)
        self._assert_every_event_once_on_disk([self.path("run-data")], r["events_built"])
        print(f"\nreset {what}: {r['events_reassigned']} re-assigned, "
              f"{summary['applications']['bu2']['results']['events_fenced']} dropped as fenced",
              flush=True)
        with open(self.path(os.path.join("logs", "bu2.log"))) as f:
            return f.read()

    def _stopped_run_summary(self, run):
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        with open(self.path("summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", self.output_of("run.log"))
        return summary

    def _assert_faults_lose_nothing(self, faults, events):
        """A run with these `faults` lines (files written) until `events` are built: nothing
        lost or incomplete, no BU lost, every event on disk once."""
        text = set_param(local_config(), "dir", self.path("run-data")) + "faults:\n" + faults
        run, ports = self._start_small_events_run({"trigger_rate_hz": 1000}, text)
        wait_until(lambda: self._built_or_none(ports["evm"]) >= events, 90,
                   f"{events} events built")
        r = self._stopped_run_summary(run)["results"]
        self.assertEqual(r["lost_bus"], [], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self._assert_every_event_once_on_disk([self.path("run-data")], r["events_built"])

    def _evm_running_2000_events(self):
        """A run (1 kHz, 1-s heartbeats) that has built 2000 events: (run, the EVM's control
        port, its context as the API describes it)."""
        run, ports = self._start_small_events_run({"heartbeat_timeout_ms": 1000,
                                                   "trigger_rate_hz": 1000})
        evm = ports["evm"]
        wait_until(lambda: self._built_or_none(evm) >= 2000, 60, "2000 events built")
        status, ctx = http(evm, "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        return run, evm, ctx

    @staticmethod
    def _unmount(mountpoint, fs):
        """Detaches the FUSE file system and ends its process. A lazy unmount ends it once the
        last file open on it is closed; on a busy machine that can take longer than the wait,
        and then the process is told to stop (it unmounts on SIGTERM)."""
        subprocess.run(["umount", "-l", mountpoint], check=False)
        try:
            fs.wait(10)
        except subprocess.TimeoutExpired:
            fs.terminate()
            fs.wait(30)

    def _built_or_none(self, port):
        try:
            return self.built(port)
        except (OSError, AssertionError):
            return -1


class EventBuilder(_EventBuilderRuns):
    """A clean run, and what is killed, fills up or fails: BUs (also while writing, and settled
    by `daqflow salvage`), a RU, the controller, a BU's disk."""

    def test_a_clean_run_builds_and_writes_every_triggered_event(self):
        text = set_param(local_config(), "dir", self.path("run-data"))
        config = self.write_config("local.yaml", text)
        code, out, summary = self.run_config(config, "--duration", "3", timeout=120)
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", out)
        r = summary["results"]
        self.assertGreater(r["events_triggered"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self.assertEqual(r["events_incomplete"], 0)
        self.assertEqual(r["events_lost"], 0)
        self.assertEqual(r["events_reassigned"], 0)
        self.assertEqual(r["lost_bus"], [])
        self.assertEqual(r["events_written"], r["events_built"], "everything is on disk")
        self.assertEqual(r["bus"]["bu1"] + r["bus"]["bu2"], r["events_built"])
        self.assertGreater(r["throughput_mb_s"], 0)
        evm = summary["applications"]["evm0"]
        self.assertEqual(evm["state"], "Halted")
        self.assertEqual(evm["metrics"]["events_in_flight"], 0)
        for bu in ("bu1", "bu2"):
            self.assertEqual(summary["applications"][bu]["results"]["events_corrupted"], 0)
        sidecars = [n for n in os.listdir(self.path("run-data")) if n.endswith(".json")]
        self.assertGreaterEqual(len(sidecars), 2, "at least one closed file per BU")

    def test_events_past_the_disk_cap_are_counted_in_metrics_status_and_summary(self):
        """BUs with a 1 MiB cap: every event built past it is counted as not written, the same
        figure in each BU's Prometheus counter, the status line, the summary and the warning at
        the end of the run; what is on disk is every written event once."""
        text = set_param(local_config(), "dir", self.path("run-data"))
        text = set_param(text, "max_total_mb", 1)
        run, ports = self._start_small_events_run({}, text)
        wait_until(lambda: "NOT WRITTEN" in self.output_of("run.log") or run.poll() is not None,
                   60, "the status line to show events not written")
        self.assertIsNone(run.poll(), self.output_of("run.log"))

        def exposed(bu):
            """The BU's daqflow_events_not_written_total as Prometheus scrapes it."""
            status, metrics = http(ports[bu], "GET", "/metrics")
            self.assertEqual(status, 200)
            line = re.search(rf'^daqflow_events_not_written_total{{[^}}]*application="{bu}"[^}}]*}} '
                             rf'(\d+)', metrics, re.M)
            self.assertIsNotNone(line, metrics[:3000])
            return int(line.group(1))
        scraped = {bu: wait_until(lambda: exposed(bu), 30, f"{bu}'s counter above 0")
                   for bu in ("bu1", "bu2")}
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        out = self.output_of("run.log")
        with open(self.path("summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", out)
        r = summary["results"]
        self.assertGreater(r["events_not_written"], 0, r)
        self.assertEqual(r["events_written"] + r["events_not_written"], r["events_built"], r)
        self.assertIn(f"WARNING: {r['events_not_written']} built events were not written", out)
        total = 0
        for bu in ("bu1", "bu2"):
            app = summary["applications"][bu]
            # The counter Prometheus scraped during the run is the one the summary reads at the
            # end: it had not passed it then.
            self.assertEqual(app["results"]["events_not_written"],
                             app["metrics"]["events_not_written"], bu)
            self.assertLessEqual(scraped[bu], app["metrics"]["events_not_written"], bu)
            total += app["results"]["events_not_written"]
        self.assertEqual(total, r["events_not_written"])
        self._assert_every_event_once_on_disk([self.path("run-data")], None,
                                              r["events_written"])

    def test_a_killed_bu_loses_no_event_and_the_others_build_on(self):
        text = set_param(local_config(), "kind", "discard")
        procs, ports, command, _ = self._start_by_hand(text)
        contexts = list(ports.items())
        evm = ports["evm"]
        wait_until(lambda: self.built(evm) >= 2000, 30, "2000 events built")

        os.kill(procs["bu2"].pid, signal.SIGKILL)
        procs["bu2"].wait(10)
        wait_until(lambda: self.app(evm, "evm0")["results"]["lost_bus"] == ["bu2"], 15,
                   "the EVM to lose bu2")
        at_loss = self.built(evm)
        wait_until(lambda: self.built(evm) >= at_loss + 2000, 30, "2000 more events built by bu1")

        command(["evm"], "Halt", "Halted")
        command(["ru1", "ru2", "ru3", "bu1"], "Halt", "Halted")
        results = self.app(evm, "evm0")["results"]
        self.assertEqual(results["events_lost"], 0, results)
        self.assertEqual(results["events_triggered"], results["events_built"], results)
        self.assertEqual(results["events_incomplete"], 0)
        self.assertEqual(results["lost_bus"], ["bu2"])
        bu1 = self.app(ports["bu1"], "bu1")["results"]
        self.assertGreater(bu1["events_built"], at_loss // 2)
        for name, port in contexts:
            if name != "bu2":
                http(port, "POST", "/api/v1/shutdown")
        for name, proc in procs.items():
            wait_until(lambda: proc.poll() is not None, 15, f"{name} to exit")

    def test_daqflow_salvage_settles_a_bu_killed_while_writing_without_daqflow_run(self):
        """Contexts started by hand, BUs writing files: after SIGKILL of bu2 the EVM holds its
        granted blocks in doubt (and cannot drain) until `daqflow salvage CONFIG bu2` finishes
        bu2's file and tells the EVM which of them are on disk."""
        text = set_param(local_config(), "dir", self.path("run-data"))
        text = set_param(text, "mean", 256)
        text = set_param(text, "sd", 128)
        procs, ports, command, config = self._start_by_hand(text)
        evm = ports["evm"]
        wait_until(lambda: self.built(evm) >= 3000, 30, "3000 events built")
        os.kill(procs["bu2"].pid, signal.SIGKILL)
        procs["bu2"].wait(10)
        wait_until(lambda: self.app(evm, "evm0")["results"]["lost_bus"] == ["bu2"], 15,
                   "the EVM to lose bu2")
        self.assertTrue([n for n in os.listdir(self.path("run-data")) if n.endswith(".part")],
                        "bu2 died with a file open")
        code, out = self.daqflow(["salvage", config, "bu2"])
        self.assertEqual(code, 0, out)
        self.assertIn("salvaged", out)
        wait_until(lambda: self.app(evm, "evm0")["results"]["events_in_doubt"] == 0, 15,
                   "the EVM to hold nothing in doubt")
        at_salvage = self.built(evm)
        wait_until(lambda: self.built(evm) >= at_salvage + 1000, 30, "1000 more events built")
        command(["evm"], "Halt", "Halted")
        command(["ru1", "ru2", "ru3", "bu1"], "Halt", "Halted")
        r = self.app(evm, "evm0")["results"]
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        for name, port in ports.items():
            if name != "bu2":
                http(port, "POST", "/api/v1/shutdown")
        for name, proc in procs.items():
            wait_until(lambda: proc.poll() is not None, 15, f"{name} to exit")
        self._assert_every_event_once_on_disk([self.path("run-data")], r["events_built"])
        print("\n" + out.strip().splitlines()[-1], flush=True)

    def test_a_killed_bu_under_run_loses_no_event_and_the_run_goes_on(self):
        text = set_param(local_config(), "kind", "discard")
        config = self.write_config("local.yaml", text)
        ports = dict(contexts_of(text))
        summary_path = self.path("summary.json")
        run = self.start(["run", config, "--duration", "0", "--status-interval", "0.2",
                          "--summary", summary_path, "--log-dir", self.path("logs")], "run.log")
        wait_until(lambda: self._built_or_none(ports["evm"]) >= 2000, 60, "2000 events built")
        status, ctx = http(ports["bu2"], "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)
        wait_until(lambda: self.app(ports["evm"], "evm0")["results"]["lost_bus"] == ["bu2"], 15,
                   "the EVM to declare bu2 lost")
        after_loss = self._built_or_none(ports["evm"])
        wait_until(lambda: self._built_or_none(ports["evm"]) >= after_loss + 2000, 60,
                   "2000 more events built by bu1 alone")
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        out = self.output_of("run.log")
        self.assertIn("survivable", out)
        with open(summary_path) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", out)
        self.assertEqual(len(summary["lost"]), 1, summary["lost"])
        self.assertIn("bu2", summary["lost"][0])
        self.assertEqual(summary["applications"]["bu2"]["state"], "Lost")
        r = summary["results"]
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self.assertEqual(r["lost_bus"], ["bu2"], r)
        self.assertGreaterEqual(r["events_built"], after_loss + 2000, r)
        self.assertEqual(summary["applications"]["evm0"]["state"], "Halted", out)

    def test_a_killed_ru_fails_the_run_naming_it(self):
        # 2 s before an event missing a part fails the run: long enough for a machine loaded by
        # other tests to deliver every fragment of a healthy run.
        text = set_param(local_config(on_incomplete="fail", timeout_ms=2000), "kind", "discard")
        config = self.write_config("local.yaml", text)
        ports = dict(contexts_of(text))
        summary_path = self.path("summary.json")
        run = self.start(["run", config, "--duration", "0", "--status-interval", "0.2",
                          "--summary", summary_path, "--log-dir", self.path("logs")], "run.log")

        def built_1000():
            self.assertIsNone(run.poll(), "the run ended before 1000 events:\n" +
                              self.output_of("run.log"))
            return self._built_or_none(ports["evm"]) >= 1000
        wait_until(built_1000, 60, "1000 events built")
        status, ctx = http(ports["ru2"], "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)
        code = run.wait(90)
        out = self.output_of("run.log")
        self.assertNotEqual(code, 0, out)
        with open(summary_path) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "failed")
        self.assertIn("ru2", summary["failure"], out)
        self.assertEqual(summary["applications"]["ru2"]["state"], "Lost")
        # A BU that saw the loss before the run halted it names the RU too.
        for bu in ("bu1", "bu2"):
            app = summary["applications"][bu]
            if app["state"] == "Failed":
                self.assertIn("no data from RU 'ru2'", app["reason"], app)
        wait_until(lambda: not pid_alive(ctx["pid"]), 5, "ru2 to be gone")

    def test_a_killed_controller_leaves_closed_files_and_no_event_twice(self):
        """SIGKILL of `daqflow run` mid-run: every context it launched is told by the kernel
        (SIGTERM, its parent died) and halts in order on its own, closing its files; nothing is
        left behind, and the files hold events 0..N once each, without a gap."""
        run, ports = self._start_small_events_run({"trigger_rate_hz": 1000})
        wait_until(lambda: self._built_or_none(ports["evm"]) >= 2000, 60, "2000 events built")
        pids = []
        for name, port in ports.items():
            status, ctx = http(port, "GET", "/api/v1/context")
            self.assertEqual(status, 200, ctx)
            pids.append(ctx["pid"])
        run.kill()
        run.wait()
        wait_until(lambda: not any(pid_alive(p) for p in pids), 60, "every context to exit")
        names = os.listdir(self.path("run-data"))
        self.assertFalse([n for n in names if n.endswith(".part") or n.endswith(".reserve")],
                         names)
        code, dump = self.daqflow(["dump", self.path("run-data"), "--json", "--events"])
        self.assertEqual(code, 0, dump)
        report = json.loads(dump)
        self.assertTrue(report["all_verified"], dump[:2000])
        numbers = [e["event"] for f in report["files"] for e in f["event_list"]]
        self.assertGreaterEqual(len(numbers), 2000)
        self.assertEqual(len(numbers), len(set(numbers)), "an event written twice")
        # Each context halts in order on its own: the EVM stops triggering and waits for what
        # is in flight, the BUs build and write it.
        self.assertEqual(sorted(numbers), list(range(len(numbers))), "a gap in the events")
        print(f"\nkilled controller: {len(numbers)} events on disk, the highest "
              f"{max(numbers)}", flush=True)

    def test_a_bu_killed_while_writing_leaves_every_event_on_disk_once(self):
        """SIGKILL of a BU writing files: the controller finishes its unfinished file and tells
        the EVM which granted blocks are on disk; the others are built again by bu1."""
        run, ports = self._start_small_events_run({"trigger_rate_hz": 20000})
        summary_path = self.path("summary.json")
        evm = ports["evm"]
        wait_until(lambda: self._built_or_none(evm) >= 3000, 60, "3000 events built")
        status, ctx = http(ports["bu2"], "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)
        wait_until(lambda: "bu2: salvaged" in self.output_of("run.log"), 60,
                   "the controller to salvage bu2's files")
        at_salvage = self._built_or_none(evm)
        wait_until(lambda: self._built_or_none(evm) >= at_salvage + 1000, 60,
                   "1000 more events built by bu1")
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        out = self.output_of("run.log")
        with open(summary_path) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", out)
        r = summary["results"]
        self.assertEqual(r["lost_bus"], ["bu2"], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_in_doubt"], 0, r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)

        self._assert_every_event_once_on_disk([self.path("run-data")], r["events_built"])
        print("\n" + [line for line in out.splitlines() if "bu2: salvaged" in line][0],
              flush=True)

    def test_a_bu_whose_disk_fills_up_is_left_out_and_no_event_is_lost(self):
        """bu2 writes to a tmpfs of 6 MB: when it is full bu2's output fails and bu2 goes Failed;
        the controller leaves it out like a dead BU, salvages its files, and bu1 builds on."""
        small = self.path("small-disk")
        os.makedirs(small)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", small], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", small], check=False)
        text = set_param(local_config(), "dir", self.path("run-data"))
        bu2 = text.index("id: bu2")
        text = text[:bu2] + text[bu2:].replace(f"dir: {self.path('run-data')}", f"dir: {small}", 1)
        # A disk that fills while the run goes on: started without the pre-flight checks, which
        # would refuse a disk this small before anything starts (test_preflight).
        run, ports = self._start_small_events_run({"trigger_rate_hz": 20000}, text,
                                                  ["--no-preflight"])
        summary_path = self.path("summary.json")
        evm = ports["evm"]
        wait_until(lambda: "bu2: salvaged" in self.output_of("run.log")
                   or run.poll() is not None, 90, "bu2's disk to fill and its files salvaged")
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        at_salvage = self._built_or_none(evm)
        wait_until(lambda: self._built_or_none(evm) >= at_salvage + 1000, 60,
                   "1000 more events built by bu1")
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        out = self.output_of("run.log")
        self.assertIn("No space left on device", out)
        with open(summary_path) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", out)
        r = summary["results"]
        self.assertEqual(r["lost_bus"], ["bu2"], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_in_doubt"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self._assert_every_event_once_on_disk([self.path("run-data"), small], r["events_built"])
        # bu2 is Failed, not dead: the summary still counts what the salvage left in its files.
        self.assertEqual(r["events_written"], r["events_built"], r)
        self.assertEqual(r["events_not_written"], 0, r)
        print("\n" + [line for line in out.splitlines() if "bu2: salvaged" in line][0],
              flush=True)

    def test_a_bu_whose_disk_fails_is_left_out_and_loses_only_what_the_disk_held(self):
        """bu2 writes to a disk that fails after 2 MB (failing_fs.py: every write, truncate,
        fsync, create and rename then ends with EIO, reads still work): bu2's output fails and
        bu2 goes Failed; the controller leaves it out and tries to salvage its files. The
        unfinished file cannot be finished, so it is not output: its blocks in doubt are built
        again by bu1, and what bu2 had acknowledged in it is reported lost. No event is in the
        output twice, and the output lacks exactly what the salvage reports lost."""
        backing, disk = self.path("failing-backing"), self.path("failing-disk")
        os.makedirs(backing)
        os.makedirs(disk)
        with open(self.path("failing_fs.log"), "w") as log:
            fs = subprocess.Popen(["/usr/bin/python3",
                                   os.path.join(os.path.dirname(__file__), "failing_fs.py"),
                                   backing, disk, str(2 << 20)],
                                  stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(self._unmount, disk, fs)
        wait_until(lambda: os.path.ismount(disk) or fs.poll() is not None, 10,
                   "the failing disk to be mounted")
        self.assertTrue(os.path.ismount(disk), self.output_of("failing_fs.log"))
        text = set_param(local_config(), "dir", self.path("run-data"))
        bu2 = text.index("id: bu2")
        text = text[:bu2] + text[bu2:].replace(f"dir: {self.path('run-data')}", f"dir: {disk}", 1)
        run, ports = self._start_small_events_run({"trigger_rate_hz": 20000}, text)
        summary_path = self.path("summary.json")
        evm = ports["evm"]
        wait_until(lambda: "bu2: salvaged" in self.output_of("run.log")
                   or run.poll() is not None, 90, "bu2's disk to fail and its salvage tried")
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        at_salvage = self._built_or_none(evm)
        wait_until(lambda: self._built_or_none(evm) >= at_salvage + 1000, 60,
                   "1000 more events built by bu1")
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        out = self.output_of("run.log")
        self.assertIn("Input/output error", out)
        salvage = [line for line in out.splitlines() if "bu2: salvaged" in line][0]
        self.assertIn("not finished: salvage: ", salvage)
        self.assertIn("Input/output error", salvage)
        with open(summary_path) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", out)
        r = summary["results"]
        self.assertEqual(r["lost_bus"], ["bu2"], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_in_doubt"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)

        # The output: every file with its sidecar, in both folders; bu2's unfinished file is
        # not part of it.
        output = []
        for d in (self.path("run-data"), disk):
            code, dump = self.daqflow(["dump", d, "--json", "--events"])
            report = json.loads(dump)
            for f in report["files"]:
                if f.get("complete"):
                    output += [e["event"] for e in f["event_list"]]
        self.assertEqual(len(output), len(set(output)), "no event twice in the output")
        parts = [n for n in os.listdir(disk) if n.endswith(".dqf.part")]
        self.assertEqual(len(parts), 1, os.listdir(disk))
        match = re.search(r"(\d+) event\(s\) written before are lost", salvage)
        lost = int(match.group(1)) if match else 0
        missing = set(range(r["events_built"])) - set(output)
        self.assertEqual(len(missing), lost, salvage)
        # That loss is loud: bu2's results, the run's events_not_written and the warning at the
        # end; the events_written of the summary are the files' (bu2's from its salvage).
        self.assertEqual(summary["applications"]["bu2"]["results"]["events_lost_from_disk"], lost)
        self.assertEqual(r["events_not_written"], lost, r)
        self.assertEqual(r["events_written"], len(output), r)
        if lost > 0:
            self.assertIn(f"WARNING: {lost} built events were not written", out)
        # What is missing is what bu2 had written before its disk failed.
        code, dump = self.daqflow(["dump", os.path.join(disk, parts[0]), "--json", "--events"])
        in_part = {e["event"] for f in json.loads(dump)["files"] for e in f["event_list"]}
        self.assertLessEqual(missing, in_part)
        print("\n" + salvage, flush=True)


class EventBuilderFaults(_EventBuilderRuns):
    """What is frozen, cut off, slowed, reset or corrupted: BUs, RUs and the EVM, by signals and
    by the configuration's `faults`."""

    def test_a_frozen_bu_is_fenced_and_writes_no_event_twice(self):
        """SIGSTOP for longer than the EVM's heartbeat timeout and the controller's read timeout,
        then SIGCONT, on BUs writing files: the EVM re-assigns what the frozen BU was not granted,
        the woken BU drops what was taken from it and rejoins, and the files hold every event
        exactly once (docs/reliability.md)."""
        run, ports = self._start_small_events_run({"heartbeat_timeout_ms": 1000,
                                                   "trigger_rate_hz": 1000})
        summary_path = self.path("summary.json")
        evm = ports["evm"]
        wait_until(lambda: self._built_or_none(evm) >= 2000, 60, "2000 events built")
        status, ctx = http(ports["bu2"], "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGSTOP)
        try:
            wait_until(lambda: self.app(evm, "evm0")["results"]["lost_bus"] == ["bu2"], 15,
                       "the EVM to declare the frozen bu2 lost")
            at_loss = self._built_or_none(evm)
            wait_until(lambda: self._built_or_none(evm) >= at_loss + 1000, 60,
                       "1000 more events built by bu1 alone")
            bu2_silent = re.compile(r"context bu2 \(.*\) does not answer its control API")
            wait_until(lambda: bu2_silent.search(self.output_of("run.log")), 60,
                       "the controller to see that bu2 does not answer")
        finally:
            os.kill(ctx["pid"], signal.SIGCONT)
        wait_until(lambda: self.app(evm, "evm0")["results"]["rejoined_bus"] == ["bu2"], 30,
                   "the woken bu2 to rejoin")
        bu2_before = self.app(ports["bu2"], "bu2")["results"]["events_built"]
        wait_until(lambda: self.app(ports["bu2"], "bu2")["results"]["events_built"]
                   >= bu2_before + 500, 60, "bu2 to build again")
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        out = self.output_of("run.log")
        self.assertIn("context bu2 answers again", out)
        with open(self.path(os.path.join("logs", "bu2.log"))) as f:
            bu2_log = f.read()
        self.assertIn("the EVM declared this BU lost", bu2_log)
        self.assertIn("rejoining under epoch 1", bu2_log)
        with open(summary_path) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", out)
        r = summary["results"]
        self.assertEqual(r["lost_bus"], ["bu2"], r)
        self.assertEqual(r["rejoined_bus"], ["bu2"], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_in_doubt"], 0, r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self.assertEqual(r["events_written"], r["events_built"], r)
        self.assertEqual(r["bus"]["bu1"] + r["bus"]["bu2"], r["events_built"], r)
        print(f"\nfrozen bu2: {summary['applications']['bu2']['results']['events_fenced']} built "
              f"events dropped as fenced, {r['events_reassigned']} re-assigned", flush=True)

        self._assert_every_event_once_on_disk([self.path("run-data")], r["events_built"])

    def test_a_bu_cut_off_from_the_evm_and_restored_writes_no_event_twice(self):
        """The fault transport cuts both directions between bu2 and the EVM for 4 s (longer than
        the EVM's heartbeat timeout; nothing is lost in the cut, it arrives late and in order,
        as TCP does over a cable pulled and put back): the EVM declares bu2 lost and re-assigns
        what it was not granted; when the link is back bu2 hears the fence, drops what was
        taken from it and rejoins, and the files hold every event exactly once.

        Each direction's cut starts 3 s after its own first message, so on a busy machine the
        two cuts need not coincide: the EVM's own part of a block given to bu2 after it
        rejoined can still be held for seconds. The BUs wait 10 s for a part (timeout_ms), so
        that such a block is whole, not incomplete."""
        text = set_param(local_config(timeout_ms=10000), "dir", self.path("run-data"))
        text += ("faults:\n"
                 "  - {from: bu2, to: evm0, cut_ms: 4000, after_ms: 3000}\n"
                 "  - {from: evm0, to: bu2, cut_ms: 4000, after_ms: 3000}\n")
        run, ports = self._start_small_events_run({"heartbeat_timeout_ms": 1000,
                                                   "trigger_rate_hz": 1000}, text)
        evm = ports["evm"]
        wait_until(lambda: self._built_or_none(evm) >= 100, 60, "100 events built")
        wait_until(lambda: self.app(evm, "evm0")["results"]["lost_bus"] == ["bu2"], 60,
                   "the EVM to declare bu2 lost while its link is cut")
        wait_until(lambda: self.app(evm, "evm0")["results"]["rejoined_bus"] == ["bu2"], 60,
                   "bu2 to rejoin once the link is back")
        bu2_before = self.app(ports["bu2"], "bu2")["results"]["events_built"]
        wait_until(lambda: self.app(ports["bu2"], "bu2")["results"]["events_built"]
                   >= bu2_before + 500, 60, "bu2 to build again")
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        out = self.output_of("run.log")
        with open(self.path(os.path.join("logs", "bu2.log"))) as f:
            bu2_log = f.read()
        self.assertIn("fault injection on its links", bu2_log)
        self.assertIn("the EVM declared this BU lost", bu2_log)
        with open(self.path("summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", out)
        r = summary["results"]
        self.assertEqual(r["lost_bus"], ["bu2"], r)
        self.assertEqual(r["rejoined_bus"], ["bu2"], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_in_doubt"], 0, r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self.assertEqual(r["events_written"], r["events_built"], r)
        self._assert_every_event_once_on_disk([self.path("run-data")], r["events_built"])
        print(f"\ncut bu2: {summary['applications']['bu2']['results']['events_fenced']} built "
              f"events dropped as fenced, {r['events_reassigned']} re-assigned", flush=True)

    def test_a_reset_link_between_a_ru_and_a_bu_is_dialed_again_and_nothing_is_incomplete(self):
        """The fault transport resets the connection from ru1 to bu2 (as a TCP reset from the
        network would): what was in flight on it is gone. bu2 dials ru1 again and, the link
        back, leaves: the EVM takes back and fences what it had given bu2, the RUs send those
        blocks whole to bu1, and bu2 rejoins. No event is incomplete, lost or written twice."""
        log = self._reset_bu2_link("{from: ru1, to: bu2, reset: true, after_messages: 200}",
                                   "its link to ru1")
        self.assertIn("the link to RU 'ru1' failed", log)
        self.assertIn("the link to RU 'ru1' is back; leaving", log)

    def test_a_reset_link_between_a_bu_and_the_evm_is_dialed_again_and_nothing_is_lost(self):
        """The fault transport resets bu2's connection to the EVM: the EVM loses bu2 at once
        (re-assigning what it had not granted; granted blocks stay bu2's, in doubt), bu2 dials
        it again, leaves, hears its fence, asks again about the blocks whose answer was lost,
        sends its last acknowledgements again and rejoins. Nothing is lost, incomplete, left in
        doubt or written twice."""
        log = self._reset_bu2_link("{from: bu2, to: evm0, reset: true, after_messages: 300}",
                                   "its link to the EVM")
        self.assertIn("the link to the EVM 'evm0' failed", log)
        self.assertIn("the link to the EVM 'evm0' is back", log)
        self.assertIn("the EVM declared this BU lost", log)

    def test_a_bu_that_posts_to_the_evm_before_it_hears_their_link_failed_waits_for_it(self):
        """bu2 stops taking what the EVM sends (a 2-s stall) just before the EVM resets their
        link: the reset's error completion waits behind the stall while bu2 goes on posting to
        the EVM over the failed link, which refuses. bu2 must wait for the link's own
        completion, dial again, leave and rejoin: taking the refused post for an EVM that
        refuses its messages lost a BU whose link would have come back (seen under load, where
        the time between a BU's poll and its post is long)."""
        log = self._reset_bu2_link("{from: evm0, to: bu2, reset: true, after_messages: 300}\n"
                                   "  - {from: evm0, to: bu2, stall_ms: 2000, after_messages: 299}",
                                   "its link to the EVM, its failure heard late")
        self.assertIn("the link to the EVM 'evm0' failed", log)
        self.assertIn("the link to the EVM 'evm0' is back", log)
        self.assertNotIn("refuses messages", log)

    def test_a_corrupted_message_to_a_bu_is_caught_and_no_event_is_lost(self):
        """One message from ru1 to bu2 leaves with a flipped bit (the fault transport, payload
        CRCs on): bu2's transport rejects it by its CRC and counts it, bu2 cannot build without
        ru1 and fails; the controller leaves it out like a dead BU and salvages its files, the
        EVM re-assigns what it had not written, and the files hold every event exactly once."""
        text = set_param(local_config(), "dir", self.path("run-data"))
        text = text.replace("transports: {default: tcp,",
                            "transports: {payload_crc: true, default: tcp,", 1)
        self.assertIn("payload_crc: true", text)
        text += "faults:\n  - {from: ru1, to: bu2, corrupt: true, after_messages: 100}\n"
        run, ports = self._start_small_events_run({"trigger_rate_hz": 2000}, text)
        evm = ports["evm"]
        wait_until(lambda: "bu2: salvaged" in self.output_of("run.log")
                   or run.poll() is not None, 90, "bu2 to fail and its files to be salvaged")
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        at_salvage = self._built_or_none(evm)
        wait_until(lambda: self._built_or_none(evm) >= at_salvage + 1000, 60,
                   "1000 more events built by bu1")
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        out = self.output_of("run.log")
        self.assertIn("payload CRC32C mismatch", out)
        with open(self.path("summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", out)
        r = summary["results"]
        self.assertEqual(r["lost_bus"], ["bu2"], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_in_doubt"], 0, r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self._assert_every_event_once_on_disk([self.path("run-data")], r["events_built"])

    def test_a_slow_bu_takes_less_and_nothing_is_lost(self):
        """Every message from the RUs to bu2 arrives 500 ms late (the fault transport), as at a
        BU whose disk or network is slow: bu2's window stays full, the EVM gives it only what it
        asks for, bu1 takes the rest, and nothing is lost or written twice."""
        text = set_param(local_config(), "dir", self.path("run-data"))
        text += "faults:\n" + "".join(
            f"  - {{from: {ru}, to: bu2, delay_ms: 500}}\n" for ru in ("ru1", "ru2", "ru3"))
        run, ports = self._start_small_events_run({"trigger_rate_hz": 1000}, text)
        wait_until(lambda: self._built_or_none(ports["evm"]) >= 5000, 90, "5000 events built")
        r = self._stopped_run_summary(run)["results"]
        self.assertEqual(r["lost_bus"], [], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self.assertEqual(r["events_written"], r["events_built"], r)
        self.assertGreater(r["bus"]["bu2"], 0, r)
        self.assertGreater(r["bus"]["bu1"], r["bus"]["bu2"], r)
        self._assert_every_event_once_on_disk([self.path("run-data")], r["events_built"])
        print(f"\nslow bu2: bu1 built {r['bus']['bu1']}, bu2 {r['bus']['bu2']}", flush=True)

    def test_a_ru_cut_off_from_the_evm_for_1_s_loses_nothing(self):
        """The fault transport cuts both directions between ru1 and the EVM for 1 s, less than
        the BUs' timeout_ms (5 s here): ru1 gets its assignments late and in order, the BUs wait
        for its parts, and every event is built whole and on disk once."""
        self._assert_faults_lose_nothing(
            "  - {from: evm0, to: ru1, cut_ms: 1000, after_ms: 2000}\n"
            "  - {from: ru1, to: evm0, cut_ms: 1000, after_ms: 2000}\n", 5000)

    def test_a_slow_ru_slows_the_run_and_loses_nothing(self):
        """Every message of ru1 to the BUs arrives 200 ms late (within timeout_ms): the BUs wait
        for its parts and every event is built whole and on disk once."""
        self._assert_faults_lose_nothing(
            "  - {from: ru1, to: bu1, delay_ms: 200}\n"
            "  - {from: ru1, to: bu2, delay_ms: 200}\n", 3000)

    def test_an_evm_frozen_for_3_s_loses_nothing(self):
        """SIGSTOP of the EVM for 3 s (past its BUs' heartbeat timeout, within the controller's
        read timeout), then SIGCONT: on waking it must not take the backlog of heartbeats for
        silence; the run goes on and every event is on disk once."""
        run, evm, ctx = self._evm_running_2000_events()
        os.kill(ctx["pid"], signal.SIGSTOP)
        try:
            time.sleep(3)
        finally:
            os.kill(ctx["pid"], signal.SIGCONT)
        at_wake = self._built_or_none(evm)
        wait_until(lambda: self._built_or_none(evm) >= at_wake + 2000, 60,
                   "2000 more events built")
        r = self._stopped_run_summary(run)["results"]
        self.assertEqual(r["lost_bus"], [], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self.assertEqual(r["events_written"], r["events_built"], r)
        self._assert_every_event_once_on_disk([self.path("run-data")], r["events_built"])

    def test_grants_held_past_their_lease_are_asked_for_again_and_the_run_ends_clean(self):
        """Every message of the EVM to bu2 arrives 1.5 s late for 3 s, from its 300th message on
        (bu2's heartbeats still reach the EVM, so it is not lost): with a discard output a grant
        that comes more than a lease (1 s) after bu2 asked is not used, and bu2 asks again; the
        EVM grants those blocks again and closes them, so the RUs can free what follows them,
        and the run goes on and halts clean. (A late grant dropped instead left its block open
        at the EVM for good: the builder stopped, and the Halt timed out draining.) The EVM's
        own parts of bu2's blocks come late too: the BUs wait 10 s for a part (timeout_ms)."""
        text = re.sub(r"output: \{kind: file[^}]*\}", "output: {kind: discard}",
                      local_config(timeout_ms=10000))
        text += ("faults:\n"
                 "  - {from: evm0, to: bu2, delay_ms: 1500, for_ms: 3000, after_messages: 300}\n")
        run, ports = self._start_small_events_run({}, text)
        evm, bu2 = ports["evm"], ports["bu2"]
        wait_until(lambda: self._built_or_none(evm) >= 1000, 60, "1000 events built")
        wait_until(lambda: self.app(bu2, "bu2")["metrics"].get("grants_late", 0) > 0, 60,
                   "bu2 to get a grant after its lease, while the link from the EVM is cut")
        bu2_before = self.app(bu2, "bu2")["results"]["events_built"]
        wait_until(lambda: self.app(bu2, "bu2")["results"]["events_built"] >= bu2_before + 2000,
                   60, "bu2 to build on once the link is back")
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        with open(self.path("summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", self.output_of("run.log"))
        r = summary["results"]
        self.assertEqual(r["lost_bus"], [], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self.assertEqual(r["bus"]["bu1"] + r["bus"]["bu2"], r["events_built"], r)
        late = summary["applications"]["bu2"]["metrics"]["grants_late"]
        self.assertGreater(late, 0)
        print(f"\nthe EVM's messages to bu2 1.5 s late for 3 s: {late} grant(s) came late and "
              "were asked for again", flush=True)

    def test_an_evm_frozen_past_the_controllers_read_timeout_is_slow_not_silent(self):
        """SIGSTOP of the EVM for 8 s: longer than one request of the controller may wait (5 s),
        shorter than its bound for silence. Its process lives, so it is slow, not failed: the
        controller asks again and the run goes on; every event is on disk once."""
        run, evm, ctx = self._evm_running_2000_events()
        os.kill(ctx["pid"], signal.SIGSTOP)
        try:
            # Another context may have been slow already (a RU configuring on a loaded host).
            evm_slow = re.compile(r"context evm \(pid .*\) is slow")
            wait_until(lambda: run.poll() is not None or
                       evm_slow.search(self.output_of("run.log")),
                       60, "the controller to find the EVM slow (or to end the run)")
            self.assertIsNone(run.poll(), self.output_of("run.log"))
            time.sleep(3)  # past 8 s frozen: the second request waits too
        finally:
            if pid_alive(ctx["pid"]):
                os.kill(ctx["pid"], signal.SIGCONT)
        wait_until(lambda: "context evm answered within its bound" in self.output_of("run.log"),
                   60, "the EVM to answer again")
        at_wake = self._built_or_none(evm)
        wait_until(lambda: self._built_or_none(evm) >= at_wake + 2000, 60,
                   "2000 more events built")
        out = self.output_of("run.log")
        self.assertNotIn("does not answer its control API", out)
        r = self._stopped_run_summary(run)["results"]
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_written"], r["events_built"], r)
        self._assert_every_event_once_on_disk([self.path("run-data")], r["events_built"])

    def test_an_evm_frozen_as_the_run_is_enabled_is_slow_and_the_run_starts(self):
        """SIGSTOP of the EVM from the moment the BUs are enabled until 6 s after the controller
        turned to the EVM: its Enable goes unanswered past the controller's read timeout (5 s).
        Its process lives: slow, not failed (silent only 15 s after its first unanswered request,
        which comes 5 s after the freeze); the Enable it took is done once it wakes, and the run
        goes on."""
        run, ports = self._start_small_events_run({"trigger_rate_hz": 1000})
        evm = ports["evm"]
        # The EVM's process from its listening socket: its control API may take seconds to
        # answer while it configures on a busy machine (faulting in its pools).
        ctx = {"pid": wait_until(lambda: pid_listening_on(evm), 120, "the EVM's control port")}
        wait_until(lambda: "enabling rank 0" in self.output_of("run.log"), 120,
                   "the controller to enable the BUs", interval=0.001)
        os.kill(ctx["pid"], signal.SIGSTOP)
        try:
            wait_until(lambda: run.poll() is not None or "enabling rank 20" in
                       self.output_of("run.log"), 60, "the controller to enable the EVM")
            time.sleep(6)
        finally:
            if pid_alive(ctx["pid"]):
                os.kill(ctx["pid"], signal.SIGCONT)
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        wait_until(lambda: self._built_or_none(evm) >= 2000, 60, "2000 events built")
        out = self.output_of("run.log")
        self.assertRegex(out, r"context evm \(pid .*\) is slow")
        r = self._stopped_run_summary(run)["results"]
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_written"], r["events_built"], r)

    def test_a_frozen_ru_fails_the_run_naming_it_and_no_event_is_written_twice(self):
        """SIGSTOP of ru2 until the controller gives up on it: a RU is not survivable, so the run
        fails naming it; what the BUs wrote holds no event twice."""
        run, ports = self._start_small_events_run({"trigger_rate_hz": 1000})
        wait_until(lambda: self._built_or_none(ports["evm"]) >= 2000, 60, "2000 events built")
        status, ctx = http(ports["ru2"], "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGSTOP)
        self.addCleanup(lambda: pid_alive(ctx["pid"]) and os.kill(ctx["pid"], signal.SIGCONT))
        wait_until(lambda: run.poll() is not None, 120, "the run to fail")
        out = self.output_of("run.log")
        self.assertNotEqual(run.returncode, 0, out)
        self.assertIn("context ru2", out)
        self.assertIn("does not answer its control API", out)
        with open(self.path("summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "failed", out)
        numbers = []
        code, dump = self.daqflow(["dump", self.path("run-data"), "--json", "--events"])
        self.assertEqual(code, 0, dump)
        for f in json.loads(dump)["files"]:
            numbers += [e["event"] for e in f["event_list"]]
        self.assertGreater(len(numbers), 0)
        self.assertEqual(len(numbers), len(set(numbers)), "an event written twice")

    def test_a_frozen_evm_fails_the_run_naming_it_and_loses_nothing(self):
        """SIGSTOP of the EVM until the controller gives up on it: its process lives, so it is
        slow until it has been silent for the documented bound (15 s after its first unanswered
        request); the EVM is not survivable, so the run then fails naming it, and the others
        halt without asking it again. No event is counted lost, none is written twice, and
        every event counted written is on disk."""
        run, evm, ctx = self._evm_running_2000_events()
        frozen_at = time.monotonic()
        os.kill(ctx["pid"], signal.SIGSTOP)
        self.addCleanup(lambda: pid_alive(ctx["pid"]) and os.kill(ctx["pid"], signal.SIGCONT))
        wait_until(lambda: run.poll() is not None, 120, "the run to fail")
        print(f"\nthe run failed {time.monotonic() - frozen_at:.1f} s after the EVM froze")
        out = self.output_of("run.log")
        self.assertNotEqual(run.returncode, 0, out)
        self.assertRegex(out, r"context evm \(pid .*\) is slow")
        with open(self.path("summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "failed", out)
        self.assertIn("evm", summary["failure"])
        self.assertIn("does not answer its control API", summary["failure"])
        r = summary["results"]
        print(f"results: { {k: v for k, v in r.items() if k.startswith('events')} }")
        self.assertEqual(r["events_lost"], 0, r)
        self._assert_every_event_once_on_disk([self.path("run-data")], None,
                                              r["events_written"])


if __name__ == "__main__":
    unittest.main()
