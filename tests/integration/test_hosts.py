"""A run across hosts (issue 15): the event builder on four hosts made of network namespaces
(netns_hosts.py), each with its own sshd, started by `daqflow run` through the ssh launcher.

Checked: every event built and written once over tcp, ucx and ofi between the hosts; the logs of
every context read back with `daqflow logs`; a controller killed mid-run either leaves nothing
behind once the lease runs out, or is replaced by `daqflow run --attach`, which halts the run
cleanly when `daqflow stop` asks; a BU whose host loses its link mid-run is declared lost and
fenced, and the run loses nothing and writes nothing twice.
"""

import http.client as httpclient
import json
import os
import re
import shutil
import signal
import time
import unittest

from daqflow_testlib import PATIENT_BU_MS, DaqflowTestCase, read_example, rewrite_ports, \
    set_bu_params, set_default_transport, set_param, wait_until
from netns_hosts import NamespaceHosts, available

# Which host each context of examples/local.yaml runs on: the EVM beside an RU, two RUs
# together, each BU alone (so that cutting a BU's host cuts nothing else).
PLACEMENT = {"evm": 0, "ru1": 0, "ru2": 1, "ru3": 1, "bu1": 2, "bu2": 3}


class SshHosts(DaqflowTestCase):
    @classmethod
    def setUpClass(cls):
        why = available()
        if why is not None:
            raise RuntimeError(f"test_hosts needs namespace hosts: {why}")
        cls.hosts = NamespaceHosts(4)
        try:
            cls.start_engine()
        except Exception:
            cls.hosts.close()
            raise

    @classmethod
    def start_engine(cls):
        """What the launcher needs on every host."""
        cls.ssh_options = cls.hosts.start_sshd()

    @classmethod
    def tearDownClass(cls):
        cls.hosts.close()

    launcher = "ssh"

    def host_settings(self, i):
        """What host i's entry says beyond address, launcher, lease and workdir."""
        return f"    ssh: {{user: root, options: {json.dumps(self.ssh_options)}}}\n"

    def config(self, name, transport="tcp", lease_s=20, extra_transport=""):
        """examples/local.yaml on the namespace hosts, launched over ssh, each host with a working
        directory of its own (where its BU writes) under the test directory."""
        text = rewrite_ports(read_example("local.yaml"))
        text = set_bu_params(set_default_transport(text, transport), timeout_ms=PATIENT_BU_MS)
        # Small events at a bounded rate: every one is read back from the files.
        text = set_param(set_param(text, "mean", 256), "sd", 128)
        text = text.replace("bus: [bu1, bu2]", "bus: [bu1, bu2]\n        trigger_rate_hz: 4000\n"
                            "        heartbeat_timeout_ms: 3000", 1)
        if extra_transport:
            text = re.sub(r"^transports: \{", "transports: {" + extra_transport + ", ", text,
                          flags=re.M)
        out, context = [], None
        for line in text.split("\n"):
            m = re.match(r"\s*- name: (\w+)", line)
            if m:
                context = m.group(1)
            if line.strip().startswith("host:") and context in PLACEMENT:
                line = line.replace("127.0.0.1", self.hosts.addresses[PLACEMENT[context]])
            out.append(line)
        text = "\n".join(out)
        token = self.path("token")
        with open(token, "w") as f:
            f.write("hosts-test-token\n")
        os.chmod(token, 0o600)
        hosts = "hosts:\n"
        for i, address in enumerate(self.hosts.addresses):
            hosts += (f"  - address: {address}\n    launcher: {self.launcher}\n"
                      f"    lease_s: {lease_s}\n    workdir: {self.workdir(i)}\n" +
                      self.host_settings(i))
        text = text.replace("contexts:\n", f"access: {{token_file: {token}}}\n{hosts}contexts:\n",
                            1)
        return self.write_config(name, text)

    def workdir(self, i):
        return self.path(f"host{i}")

    def check_built_once(self, summary):
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        r = summary["results"]
        self.assertGreater(r["events_built"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_written"], r["events_built"], r)
        for bu in ("bu1", "bu2"):
            self.assertGreater(r["bus"][bu], 0, f"{bu} built nothing")
        return r

    def check_files(self, written):
        """daqflow dump over both BUs' files (each on its own host): every event once."""
        numbers = []
        for bu in ("bu1", "bu2"):
            d = os.path.join(self.workdir(PLACEMENT[bu]), "run-data")
            code, dump = self.daqflow(["dump", d, "--json", "--events"], timeout=120)
            self.assertEqual(code, 0, dump[-2000:])
            report = json.loads(dump)
            self.assertTrue(report["all_verified"], dump[:2000])
            numbers += [e["event"] for f in report["files"] for e in f["event_list"]]
        self.assertEqual(len(numbers), written)
        self.assertEqual(len(set(numbers)), len(numbers), "an event written twice")

    def executives_left(self):
        """The processes still running in the hosts, sshd's and supervisord's aside."""
        left = []
        for i in range(self.hosts.count):
            for pid in self.hosts.pids(i):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                if "sshd" not in cmd and "supervisord" not in cmd:
                    left.append(f"host{i}: {pid} {cmd.strip()}")
        return left

    def test_the_event_builder_runs_across_four_hosts_over_tcp_ucx_and_ofi(self):
        # The same configuration on this machine first: the times to start, configure and
        # enable, beside those through the launcher (printed, not asserted).
        with open(self.config("local.yaml")) as f:
            local = re.sub(r"^hosts:\n(?:  .*\n)+", "", f.read(), flags=re.M)
        for address in self.hosts.addresses:
            local = local.replace(address, "127.0.0.1")
        local = re.sub(r"access: \{[^}]*\}\n", "", local)
        code, out, summary = self.run_config(self.write_config("local.yaml", local), "--duration",
                                             "1", timeout=240)
        self.assertEqual(code, 0, out)
        times = [("local", summary)]
        shutil.rmtree(self.path("run-data"), ignore_errors=True)
        for transport, extra in (("tcp", ""), ("ucx", "ucx_tls: tcp"), ("ofi", "")):
            with self.subTest(transport=transport):
                config = self.config(f"hosts-{transport}.yaml", transport, extra_transport=extra)
                code, out, summary = self.run_config(config, "--duration", "3", timeout=240)
                self.assertEqual(code, 0, out)
                times.append((f"{self.launcher} {transport}", summary))
                r = self.check_built_once(summary)
                self.check_files(r["events_written"])
                # The logs of every context, read back through the launcher (the run is over:
                # the control APIs are gone): from each host over ssh, or the copies the
                # controller kept of supervisord's.
                code, logs = self.daqflow(["logs", config, "-n", "400", "--log-dir",
                                           self.path("logs")], timeout=120)
                self.assertEqual(code, 0, logs)
                for context in PLACEMENT:
                    self.assertIn(f"=== {context} ===", logs)
                    self.assertRegex(logs, rf"\[{context}\] \[info\] .*: Enabled")
                self.assertNotIn("no log:", logs)
                self.assertEqual(self.executives_left(), [])
                for i in range(self.hosts.count):
                    # The next transport's BUs start on empty directories.
                    shutil.rmtree(self.workdir(i), ignore_errors=True)
        print("\nstart, configure, enable (s):")
        for what, summary in times:
            print(f"  {what:16} {summary['start_s']:.2f} {summary['configure_s']:.2f} "
                  f"{summary['enable_s']:.2f}")

    def test_a_clean_run_keeps_every_executives_log_with_the_run(self):
        """Without --log-dir: each executive's log is kept on its host (LOG_DIR/<context>.log)
        and with the run on this machine (./run-data/logs, as the run says), and daqflow logs
        reads them after the run."""
        config = self.config("logs.yaml")
        code, out = self.daqflow(["run", config, "--duration", "1"], timeout=240)
        self.assertEqual(code, 0, out)
        self.assertIn("logs in ./run-data/logs", out)
        for context, host in PLACEMENT.items():
            on_host = os.path.join(self.workdir(host), "logs", f"{context}.log")
            kept = os.path.join(self.path("run-data"), "logs", f"{context}.log")
            for path in (on_host, kept):
                self.assertTrue(os.path.exists(path), f"{path} is missing: {out}")
                with open(path, errors="replace") as f:
                    self.assertRegex(f.read(), rf"\[{context}\] \[info\] .*: Enabled", path)
        code, logs = self.daqflow(["logs", config, "-n", "400"], timeout=120)
        self.assertEqual(code, 0, logs)
        for context in PLACEMENT:
            self.assertIn(f"=== {context} ===", logs)
            self.assertRegex(logs, rf"\[{context}\] \[info\] .*: Enabled")
        self.assertNotIn("no log:", logs)

    def test_a_killed_bu_is_salvaged_on_its_host_and_nothing_is_lost_or_written_twice(self):
        """What a BU killed on its host wrote is settled there: daqflow salvage, run through the
        launcher, finishes its file and tells the EVM which of its blocks in doubt are on disk;
        the files of both hosts hold every built event once."""
        config = self.config("salvage.yaml")
        proc = self.start_run(config, "run.log")
        host = self.hosts.addresses[PLACEMENT["bu1"]]
        with open(config) as f:
            text = f.read()
        port = int(re.search(r"name: bu1\n(?:.*\n)*?\s+control_port: (\d+)", text).group(1))
        wait_until(lambda: remote_built(host, port) > 0, 60, "bu1 to build events")
        status, ctx = remote_get(host, port, "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)
        wait_until(lambda: f"(on {host})" in self.output_of("run.log"), 120,
                   "the salvage of bu1's files on its host")
        self.assertRegex(self.output_of("run.log"), r"bu1: salvaged \d+ file\(s\)")
        time.sleep(1)  # bu2 builds alone for a while
        self.assertEqual(self.stop_run(proc, timeout=180), 0, self.output_of("run.log"))
        summary = self.summary()
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        r = summary["results"]
        self.assertEqual(r["events_in_doubt"], 0, r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"] + r["events_incomplete"], r)
        self.check_files(r["events_built"])

    def mpi_config(self):
        """examples/stream-1to1.yaml on the mpi transport, source and sink on two hosts."""
        text = set_default_transport(rewrite_ports(read_example("stream-1to1.yaml")), "mpi")
        parts = text.split("  - name: ")
        parts[1] = parts[1].replace("127.0.0.1", self.hosts.addresses[0])
        parts[2] = parts[2].replace("127.0.0.1", self.hosts.addresses[1])
        text = "  - name: ".join(parts)
        token = self.path("token")
        with open(token, "w") as f:
            f.write("hosts-test-token\n")
        os.chmod(token, 0o600)
        hosts = "hosts:\n"
        for i, address in enumerate(self.hosts.addresses[:2]):
            hosts += (f"  - address: {address}\n    launcher: {self.launcher}\n"
                      f"    workdir: {self.workdir(i)}\n" + self.host_settings(i))
        text = text.replace("contexts:\n", f"access: {{token_file: {token}}}\n{hosts}contexts:\n",
                            1)
        return self.write_config("mpi.yaml", text)

    def test_mpi_ranks_on_two_hosts(self):
        """mpirun places the ranks on their hosts and starts them with its own ssh, with the
        host's ssh settings."""
        code, out, summary = self.run_config(self.mpi_config(), "--duration", "2", timeout=180)
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        sink = summary["applications"]["sink0"]
        self.assertGreater(sink["metrics"].get("messages_in", 0), 0)
        self.assertEqual(sink["results"].get("errors_sequence"), 0)
        self.assertEqual(sink["results"].get("errors_pattern"), 0)
        with open(self.path("logs/source.log")) as f:
            log = f.read()
        # Each rank's control port on its own host: it ran there.
        self.assertIn(f"control API on http://{self.hosts.addresses[0]}:", log)
        self.assertIn(f"control API on http://{self.hosts.addresses[1]}:", log)

    def start_run(self, config, log_name, *extra):
        proc = self.start(["run", config, "--duration", "0", "--summary", self.path("summary.json"),
                           "--log-dir", self.path("logs")] + list(extra), log_name)
        wait_until(lambda: "Enabled: monitoring" in self.output_of(log_name) or
                   "running until" in self.output_of(log_name) or proc.poll() is not None,
                   120, f"the run of {log_name} to be enabled")
        self.assertIsNone(proc.poll(), self.output_of(log_name))
        return proc

    def summary(self):
        with open(self.path("summary.json")) as f:
            return json.load(f)

    def test_a_killed_controller_is_replaced_with_attach_and_the_run_ends_cleanly(self):
        config = self.config("attach.yaml")
        first = self.start_run(config, "first.log")
        # Data flows before the controller dies.
        code, logs = self.daqflow(["logs", config, "--context", "bu1"])
        self.assertEqual(code, 0, logs)
        self.assertIn("bu1: Enabled", logs)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(30)
        # The registry knows the run's controller is gone.
        code, out = self.daqflow(["runs", "list", "--json"])
        self.assertEqual(code, 0, out)
        self.assertEqual([r["state"] for r in json.loads(out)], ["controller_died"], out)
        attached = self.start_run(config, "attached.log", "--attach")
        self.assertIn("every application is Enabled: monitoring the run",
                      self.output_of("attached.log"))
        code, out = self.daqflow(["stop", config], timeout=180)
        self.assertEqual(code, 0, out)
        self.assertIn("asked the controller of the run to end it", out)
        self.assertEqual(attached.wait(120), 0, self.output_of("attached.log"))
        out = self.output_of("attached.log")
        self.assertIn("daqflow stop asked for the end of the run: halting", out)
        r = self.check_built_once(self.summary())
        self.check_files(r["events_written"])
        wait_until(lambda: not self.executives_left(), 30, "the executives to exit")
        # One run, taken over and ended.
        code, out = self.daqflow(["runs", "show", str(self.summary()["run_number"]), "--json"])
        self.assertEqual(code, 0, out)
        shown = json.loads(out)
        self.assertEqual(shown["state"], "ended", shown)
        comments = " / ".join(c["text"] for c in shown["comments"])
        self.assertIn("its controller (process", comments)
        self.assertIn("taken over by a controller", comments)

    def test_a_killed_controller_leaves_no_process_behind_once_the_lease_runs_out(self):
        # Short, to keep the test short, but not so short that a loaded machine misses it: with
        # 3 s, configuring on two busy cores once held the renewals (one a second) back too long.
        config = self.config("lease.yaml", lease_s=8)
        first = self.start_run(config, "first.log")
        self.assertNotEqual(self.executives_left(), [])
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(30)
        wait_until(lambda: not self.executives_left(), 60,
                   "the executives to end themselves when their lease runs out")
        code, logs = self.daqflow(["logs", config, "--context", "evm", "-n", "20", "--log-dir",
                                   self.path("logs")])
        self.assertEqual(code, 0, logs)
        self.assertIn("no lease renewal from the controller", logs)

    def test_a_bu_host_that_loses_its_link_is_fenced_and_nothing_is_lost_or_written_twice(self):
        config = self.config("cut.yaml", lease_s=60)
        proc = self.start_run(config, "run.log")
        bu1_host = PLACEMENT["bu1"]
        self.hosts.cut(bu1_host)
        cut_at = time.monotonic()
        try:
            bu1_silent = re.compile(r"context bu1 \(.*\) does not answer")
            wait_until(lambda: bu1_silent.search(self.output_of("run.log")), 60,
                       "the controller to see bu1's host cut off")
            wait_until(lambda: "BU 'bu1' lost" in self.daqflow(
                ["logs", config, "--context", "evm", "-n", "1000"])[1], 60,
                "the EVM to declare bu1 lost", interval=1.0)
            # Cut for longer than ssh's keepalives (3 x 2 s): the launcher's ssh client gives
            # up on the host, and the controller goes on watching bu1's executive through its
            # control port, silent but not gone (an unreachable host refuses nothing); the
            # other launchers' engines are unreachable as long. It stays shorter than the ~15 s
            # after which the kernel gives up a connection with data in flight (15
            # retransmissions at most 1 s apart, docs/transports.md).
            while time.monotonic() - cut_at < 9:
                time.sleep(0.5)
        finally:
            self.hosts.restore(bu1_host)
        cut_s = time.monotonic() - cut_at
        wait_until(lambda: "context bu1 answers again" in self.output_of("run.log"), 60,
                   "bu1's host to be back")
        # The controller went on while the host was cut off: no call to its launcher's engine
        # there (ssh, supervisord, Slurm) held up its loop, whose status line comes every second.
        out = self.output_of("run.log")
        silent = re.search(r"context bu1 \(.*\) does not answer", out)
        self.assertIsNotNone(silent, out)
        during = out[silent.end():out.index("context bu1 answers again")]
        status_lines = len(re.findall(r"^ +[0-9.]+ s  enabled", during, re.M))
        print(f"\nbu1's host cut off for {cut_s:.1f} s; the controller's status lines while it "
              f"was silent: {status_lines}", flush=True)
        self.assertGreaterEqual(status_lines, 3, out)
        # bu1 rejoined and builds again before the run ends.
        host = self.hosts.addresses[bu1_host]
        with open(config) as f:
            port = int(re.search(r"name: bu1\n(?:.*\n)*?\s+control_port: (\d+)",
                                 f.read()).group(1))
        built = remote_built(host, port)
        wait_until(lambda: remote_built(host, port) > built, 60, "bu1 to build again")
        self.assertEqual(self.stop_run(proc, timeout=180), 0, self.output_of("run.log"))
        summary = self.summary()
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        # Silent for a while, then back: it came back, it is not lost.
        self.assertEqual(summary["lost"], [], summary["lost"])
        self.assertEqual(len(summary["came_back"]), 1, summary["came_back"])
        self.assertRegex(summary["came_back"][0],
                         r"context bu1 \(.*\) did not answer its control API for [0-9.]+ s, "
                         r"then answered again")
        r = summary["results"]
        self.assertEqual(r["events_triggered"], r["events_built"] + r["events_incomplete"], r)
        self.assertEqual(r["events_lost"], 0, r)
        # The RUs' connections to bu1 send again within a second of the link's return
        # (retransmissions back off to at most 1 s), inside the BU's fragment timeout.
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertIn("bu1", r["lost_bus"], r)
        self.assertEqual(r["events_written"], r["events_built"], r)
        self.check_files(r["events_written"])

    def test_a_killed_bu_process_with_restart_on_failure_comes_back_on_its_host(self):
        config = self.config("restart.yaml")
        with open(config) as f:
            text = f.read().replace(
                "  - name: bu1\n",
                "  - name: bu1\n    restart: {policy: on-failure, backoff_ms: 200}\n", 1)
        with open(config, "w") as f:
            f.write(text)
        proc = self.start_run(config, "run.log")
        host = self.hosts.addresses[PLACEMENT["bu1"]]
        port = int(re.search(r"name: bu1\n(?:.*\n)*?\s+control_port: (\d+)", text).group(1))
        wait_until(lambda: remote_built(host, port) > 0, 60, "bu1 to build events")
        status, ctx = remote_get(host, port, "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)
        killed_at = time.monotonic()
        self.wait_for_restart("bu1")
        wait_until(lambda: remote_built(host, port) > 0, 60,
                   "the restarted bu1 to build events")
        back_after = time.monotonic() - killed_at
        print(f"\nbu1 killed on {host}: building events again after {back_after:.1f} s")
        self.assertEqual(self.stop_run(proc, timeout=180), 0, self.output_of("run.log"))
        summary = self.summary()
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        r = summary["results"]
        self.assertEqual(r["rejoined_bus"], ["bu1"], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_triggered"],
                         r["events_built"] + r["events_incomplete"] + r["events_in_doubt"], r)
        self.assertEqual(len(summary["restarted"]), 1, summary)


def remote_get(host, port, path):
    conn = httpclient.HTTPConnection(host, port, timeout=5)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read().decode())
    finally:
        conn.close()


def remote_built(host, port):
    """events_built of the BU at host:port, or 0 while it does not answer."""
    try:
        status, app = remote_get(host, port, "/api/v1/apps/bu1")
    except (OSError, ValueError):
        return 0
    if status != 200 or app.get("state") != "Enabled":
        return 0
    return app["metrics"].get("events_built", 0)


class RestartPolicy(DaqflowTestCase):
    """restart: on-failure on this machine, where what the killed BU wrote is settled before it
    comes back: every event on disk once."""

    def test_a_killed_bu_is_started_again_rejoins_and_nothing_is_lost_or_written_twice(self):
        text = rewrite_ports(read_example("local.yaml"))
        text = set_param(set_param(text, "mean", 256), "sd", 128)
        text = set_param(text, "dir", self.path("run-data"))
        # Every built event written: no block may wait out a loaded host's scheduling.
        text = set_bu_params(text, timeout_ms=PATIENT_BU_MS)
        text = text.replace("bus: [bu1, bu2]", "bus: [bu1, bu2]\n        trigger_rate_hz: 4000\n"
                            "        heartbeat_timeout_ms: 3000", 1)
        text = text.replace("  - name: bu1\n",
                            "  - name: bu1\n    restart: {policy: on-failure, backoff_ms: 200}\n", 1)
        config = self.write_config("restart.yaml", text)
        port = int(re.search(r"name: bu1\n(?:.*\n)*?\s+control_port: (\d+)", text).group(1))
        proc = self.start(["run", config, "--duration", "0", "--summary", self.path("summary.json"),
                           "--log-dir", self.path("logs")], "run.log")
        wait_until(lambda: remote_built("127.0.0.1", port) > 0, 120, "bu1 to build events")
        status, ctx = remote_get("127.0.0.1", port, "/api/v1/context")
        os.kill(ctx["pid"], signal.SIGKILL)
        self.wait_for_restart("bu1")
        wait_until(lambda: remote_built("127.0.0.1", port) > 0, 60,
                   "the restarted bu1 to build events")
        self.assertEqual(self.stop_run(proc, timeout=180), 0, self.output_of("run.log"))
        with open(self.path("summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        r = summary["results"]
        self.assertEqual(r["rejoined_bus"], ["bu1"], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_in_doubt"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"] + r["events_incomplete"], r)
        # The restarted bu1 counts what its killed predecessor left in finished files.
        self.assertEqual(r["events_written"], r["events_built"], r)
        code, dump = self.daqflow(["dump", self.path("run-data"), "--json", "--events"],
                                  timeout=120)
        self.assertEqual(code, 0, dump[-2000:])
        report = json.loads(dump)
        self.assertTrue(report["all_verified"], dump[:2000])
        numbers = [e["event"] for f in report["files"] for e in f["event_list"]]
        self.assertEqual(len(set(numbers)), len(numbers), "an event written twice")
        self.assertEqual(len(numbers), r["events_built"], "every built event on disk")
        # Two instances of bu1 wrote: the second went on after the first one's files.
        bu1_files = sorted(f["path"] for f in report["files"] if "_bu1_" in f["path"])
        self.assertGreaterEqual(len(bu1_files), 2, bu1_files)

    def test_a_killed_worker_process_is_started_again_and_rejoins_the_farm(self):
        """The filter farm (examples/farm.yaml): the process of workers w2 and w3 killed comes
        back, the SFC fences the new workers' first messages and serves them again; every event
        decided once."""
        text = rewrite_ports(read_example("farm.yaml"))
        text = text.replace("  - name: workers1\n",
                            "  - name: workers1\n    restart: {policy: on-failure, backoff_ms: 200}\n",
                            1)
        config = self.write_config("farm.yaml", text)
        port = int(re.search(r"name: workers1\n(?:.*\n)*?\s+control_port: (\d+)", text).group(1))
        proc = self.start(["run", config, "--duration", "0", "--summary", self.path("summary.json"),
                           "--log-dir", self.path("logs")], "run.log")

        def events_in(worker):
            try:
                status, app = remote_get("127.0.0.1", port, f"/api/v1/apps/{worker}")
            except (OSError, ValueError):
                return 0
            if status != 200 or app.get("state") != "Enabled":
                return 0
            return app["metrics"].get("events_in", 0)

        wait_until(lambda: events_in("w2") > 0, 120, "w2 to take events")
        status, ctx = remote_get("127.0.0.1", port, "/api/v1/context")
        os.kill(ctx["pid"], signal.SIGKILL)
        self.wait_for_restart("workers1")
        wait_until(lambda: events_in("w2") > 0 and events_in("w3") > 0, 60,
                   "the restarted workers to take events")
        self.assertEqual(self.stop_run(proc, timeout=180), 0, self.output_of("run.log"))
        with open(self.path("summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        sfc = summary["applications"]["sfc0"]["results"]
        self.assertEqual(sorted(sfc["rejoined_workers"]), ["w2", "w3"], sfc)
        r = summary["results"]
        self.assertEqual(r["events_decided"], r["events_triggered"], r)
        self.assertEqual(r["events_lost"], 0, r)


class ExpendableContexts(DaqflowTestCase):
    """expendable: a context the run could survive made fatal, and a group with a minimum."""

    def start_with(self, bu1, bu2, until_built=True):
        text = rewrite_ports(read_example("local.yaml"))
        text = set_param(set_param(text, "mean", 256), "sd", 128)
        text = set_param(text, "dir", self.path("run-data"))
        text = text.replace("bus: [bu1, bu2]", "bus: [bu1, bu2]\n        trigger_rate_hz: 4000", 1)
        text = text.replace("  - name: bu1\n", f"  - name: bu1\n    expendable: {bu1}\n", 1)
        text = text.replace("  - name: bu2\n", f"  - name: bu2\n    expendable: {bu2}\n", 1)
        config = self.write_config("expendable.yaml", text)
        ports = {name: int(port) for name, port in
                 re.findall(r"name: (\w+)\n(?:.*\n)*?\s+control_port: (\d+)", text)}
        proc = self.start(["run", config, "--duration", "0", "--summary", self.path("summary.json"),
                           "--log-dir", self.path("logs")], "run.log")
        if until_built:
            wait_until(lambda: remote_built("127.0.0.1", ports["bu1"]) > 0, 120, "bu1 to build")
        return proc, ports

    def kill(self, port):
        status, ctx = remote_get("127.0.0.1", port, "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)

    def test_a_group_below_its_minimum_fails_the_run(self):
        proc, ports = self.start_with("{group: bus, min: 2}", "{group: bus, min: 2}")
        self.kill(ports["bu2"])
        self.assertEqual(proc.wait(120), 1, self.output_of("run.log"))
        out = self.output_of("run.log")
        self.assertIn("expendable group 'bus' is down to 1 context(s) (bu1), below its min 2", out)

    def test_a_group_at_its_minimum_goes_on(self):
        proc, ports = self.start_with("{group: bus, min: 1}", "{group: bus, min: 1}")
        self.kill(ports["bu2"])
        wait_until(lambda: "the run goes on" in self.output_of("run.log"), 60, "the loss")
        self.assertEqual(self.stop_run(proc, timeout=180), 0, self.output_of("run.log"))

    def test_a_bu_lost_once_the_last_rank_is_asked_to_enable_is_a_loss_the_run_goes_on_from(self):
        # The EVM sends as soon as it is Enabled, before the controller has seen it so: a BU
        # lost then is lost from a run that has data flowing.
        proc, ports = self.start_with("true", "true", until_built=False)
        wait_until(lambda: "enabling rank 0" in self.output_of("run.log"), 120, "the Enables")
        status, bu2 = remote_get("127.0.0.1", ports["bu2"], "/api/v1/context")
        self.assertEqual(status, 200, bu2)
        wait_until(lambda: "enabling rank 20: evm0" in self.output_of("run.log"), 120,
                   "the controller to enable the EVM", interval=0.001)
        os.kill(bu2["pid"], signal.SIGKILL)
        wait_until(lambda: "the run goes on" in self.output_of("run.log"), 60, "the loss")
        wait_until(lambda: remote_built("127.0.0.1", ports["bu1"]) > 0, 60, "bu1 to build")
        self.assertEqual(self.stop_run(proc, timeout=180), 0, self.output_of("run.log"))
        with open(self.path("summary.json")) as f:
            r = json.load(f)["results"]
        self.assertEqual(r["lost_bus"], ["bu2"], r)
        self.assertEqual(r["events_lost"], 0, r)

    def test_a_context_marked_not_expendable_fails_the_run_when_lost(self):
        proc, ports = self.start_with("true", "false")
        self.kill(ports["bu2"])
        self.assertEqual(proc.wait(120), 1, self.output_of("run.log"))
        self.assertRegex(self.output_of("run.log"),
                         r"run FAILED .*context bu2 \(pid \d+\) died: killed by signal 9")


if __name__ == "__main__":
    unittest.main()
