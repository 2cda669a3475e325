"""The filter farm with real processes (docs/farm.md): an SFC generating events and six workers in
three processes. Every policy decides every event exactly once over tcp and shm; a worker
process SIGKILLed mid-run loses no event; a worker process frozen past the heartbeat timeout is
fenced, its events go to the others, and when it wakes nothing is decided twice; a plugin library
decides; accepted events are written once and verified by `daqflow dump`."""

import json
import os
import signal
import subprocess
import unittest

from daqflow_testlib import DaqflowTestCase, http, read_example, rewrite_ports, wait_until

WORKERS = {"wa": ["w0", "w1"], "wb": ["w2", "w3"], "wc": ["w4", "w5"]}


def farm_config(transport="tcp", policy="tokens", sfc="", worker="", output="{kind: file}"):
    """SFC in its own process, workers two per process; extra flow-style keys for each."""
    all_workers = [w for ws in WORKERS.values() for w in ws]
    text = (f"run: {{output: ./run-data}}\n"
            f"transports: {{default: {transport}, pipeline_depth: 8, "
            f"max_message_size: 1048576}}\n"
            f"contexts:\n"
            f"  - name: sfc\n    host: 127.0.0.1\n    control_port: 1\n    data_port: 2\n"
            f"    applications:\n"
            f"      - {{type: sfc, id: sfc0, workers: [{', '.join(all_workers)}], policy: "
            f"{policy}, output: {output}, event_size: {{dist: uniform, mean: 8192, sd: 4000, "
            f"max: 16384}}{', ' + sfc if sfc else ''}}}\n")
    for i, (ctx, ids) in enumerate(WORKERS.items()):
        text += (f"  - name: {ctx}\n    host: 127.0.0.1\n    control_port: {10 + i}\n"
                 f"    data_port: {20 + i}\n    applications:\n")
        for w in ids:
            text += (f"      - {{type: worker, id: {w}, sfc: sfc0, accept_fraction: 0.05, "
                     f"output_bytes: 4096, seed: {w[1:]}{', ' + worker if worker else ''}}}\n")
    return rewrite_ports(text)


def control_port(text, ctx):
    lines = text.splitlines()
    i = lines.index(f"  - name: {ctx}")
    return int(lines[i + 2].split(":")[1])


class Farm(DaqflowTestCase):
    def results(self, port):
        status, body = http(port, "GET", "/api/v1/apps/sfc0")
        self.assertEqual(status, 200, body)
        return body["results"]

    def decided(self, port):
        try:
            return self.results(port).get("events_decided", 0)
        except OSError:
            return 0

    def assert_written_once(self, summary_results, sfc):
        """The files hold each accepted event once, as many as the SFC says it wrote."""
        code, out = self.daqflow(["dump", self.path("run-data"), "--json", "--events"])
        self.assertEqual(code, 0, out[:3000])
        report = json.loads(out)
        self.assertTrue(report["all_verified"], out[:3000])
        numbers = [e["event"] for f in report["files"] for e in f["event_list"]]
        self.assertEqual(len(numbers), len(set(numbers)), "no event written twice")
        self.assertEqual(len(numbers), sfc["events_accepted"], sfc)
        self.assertEqual(sfc["events_written"], sfc["events_accepted"], sfc)
        self.assertTrue(all(f["content"] == "farm decisions" for f in report["files"]))
        self.assertTrue(all(n < sfc["events_received"] for n in numbers))
        return report

    def assert_every_event_decided_once(self, summary):
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        apps = summary["applications"]
        sfc = apps["sfc0"]["results"]
        self.assertGreater(sfc["events_received"], 0, sfc)
        self.assertEqual(sfc["events_decided"], sfc["events_received"], sfc)
        self.assertEqual(sfc["events_outstanding"], 0, sfc)
        self.assertEqual(sfc["events_queued"], 0, sfc)
        self.assertEqual(sum(sfc["workers"].values()), sfc["events_decided"], sfc)
        return sfc

    def test_every_policy_decides_every_event_once_over_tcp_and_shm(self):
        for transport in ("tcp", "shm"):
            for policy in ("round_robin", "tokens", "least_loaded"):
                with self.subTest(transport=transport, policy=policy):
                    text = farm_config(transport, policy, sfc="count: 3000, window: 3")
                    code, out, summary = self.run_config(self.write_config("farm.yaml", text),
                                                         "--duration", "0", timeout=120)
                    self.assertEqual(code, 0, out)
                    sfc = self.assert_every_event_decided_once(summary)
                    self.assertEqual(sfc["events_received"], 3000, sfc)
                    self.assertEqual(sfc["answers_late"], 0, sfc)
                    apps = summary["applications"]
                    answered = sum(apps[w]["results"]["events_accepted"] +
                                   apps[w]["results"]["events_rejected"]
                                   for ws in WORKERS.values() for w in ws)
                    self.assertEqual(answered, 3000)
                    self.assertGreater(sfc["events_accepted"], 0, sfc)
                    self.assert_written_once(summary["results"], sfc)
                    os.rename(self.path("run-data"), self.path(f"run-data-{transport}-{policy}"))

    def test_push_sends_every_event_once_without_answers(self):
        text = farm_config("tcp", "push", sfc="count: 5000")
        code, out, summary = self.run_config(self.write_config("farm.yaml", text), "--duration",
                                             "0", timeout=120)
        self.assertEqual(code, 0, out)
        sfc = summary["applications"]["sfc0"]["results"]
        self.assertEqual(sfc["events_pushed"], 5000, sfc)
        self.assertEqual(sfc["events_decided"], 0, sfc)
        apps = summary["applications"]
        self.assertEqual(sum(apps[w]["results"]["events_pushed"]
                             for ws in WORKERS.values() for w in ws), 5000)

    def start_farm(self, **keys):
        text = farm_config(**keys)
        config = self.write_config("farm.yaml", text)
        run = self.start(["run", config, "--duration", "0", "--status-interval", "0.5",
                          "--summary", self.path("summary.json"), "--log-dir",
                          self.path("logs")], "run.log")
        port = control_port(text, "sfc")
        wait_until(lambda: self.decided(port) >= 2000, 60, "2000 events decided")
        return run, text, port

    def finish(self, run):
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        with open(self.path("summary.json")) as f:
            return json.load(f)

    def test_a_killed_worker_process_loses_no_event(self):
        self.killed_worker_process_loses_no_event("tcp")

    def test_a_killed_worker_process_loses_no_event_over_shm(self):
        self.killed_worker_process_loses_no_event("shm")

    def killed_worker_process_loses_no_event(self, transport):
        """SIGKILL of the process of w0 and w1 while each holds events (500 us per event): the
        SFC dispatches their events again and the run goes on."""
        run, text, port = self.start_farm(
            transport=transport,
            worker="reject_time: {mean_us: 500}, accept_time: {mean_us: 800}",
            sfc="heartbeat_timeout_ms: 1000")
        status, ctx = http(control_port(text, "wa"), "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)
        wait_until(lambda: sorted(self.results(port)["lost_workers"]) == ["w0", "w1"], 30,
                   "the SFC to lose w0 and w1")
        at_loss = self.decided(port)
        wait_until(lambda: self.decided(port) >= at_loss + 2000, 60,
                   "2000 more events decided by the others")
        summary = self.finish(run)
        self.assertEqual(len(summary["lost"]), 1, summary["lost"])
        self.assertIn("context wa", summary["lost"][0])
        sfc = self.assert_every_event_decided_once(summary)
        print(f"\n{transport}: killed w0, w1: {sfc['events_redispatched']} events dispatched again, "
              f"{sfc['events_decided']} decided", flush=True)
        self.assert_written_once(summary["results"], sfc)
        if transport == "shm":
            # The killed process could not remove its segments: `daqflow shm clean --all-dead` does.
            code, out = self.daqflow(["shm", "clean", "--all-dead"])
            self.assertEqual(code, 0, out)
            left = [n for n in os.listdir("/dev/shm") if f".{ctx['pid']}.wa." in n]
            self.assertEqual(left, [], out)

    def test_a_killed_sfc_fails_the_run_and_its_files_are_finished(self):
        """SIGKILL of the SFC's process while it writes: the run fails naming it (no one else
        holds its events), and its unfinished files are settled by the salvage the BUs' are: no
        .part left, every accepted event on disk once, as many as the summary says it wrote."""
        run, text, port = self.start_farm()
        status, ctx = http(port, "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)
        self.assertEqual(run.wait(90), 1, self.output_of("run.log"))
        with open(self.path("summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "failed")
        self.assertRegex(summary["failure"], r"context sfc \(pid \d+\) died: killed by signal 9.*"
                         r"; sfc0: salvaged \d+ file\(s\)")
        self.assertFalse([n for n in os.listdir(self.path("run-data")) if n.endswith(".part")],
                         os.listdir(self.path("run-data")))
        code, out = self.daqflow(["dump", self.path("run-data"), "--json", "--events"])
        self.assertEqual(code, 0, out[:3000])
        report = json.loads(out)
        self.assertTrue(report["all_verified"], out[:3000])
        numbers = [e["event"] for f in report["files"] for e in f["event_list"]]
        self.assertGreater(len(numbers), 0)
        self.assertEqual(len(numbers), len(set(numbers)), "no event written twice")
        sfc = summary["applications"]["sfc0"]
        self.assertEqual(sfc["state"], "Lost")
        self.assertEqual(sfc["results"]["events_written"], len(numbers), sfc["results"])
        self.assertEqual(summary["results"]["farm_events_written"], len(numbers))
        print("\n" + summary["failure"], flush=True)

    def test_a_frozen_worker_process_is_fenced_and_nothing_is_decided_twice(self):
        self.frozen_worker_process_is_fenced("tcp")

    def test_a_frozen_worker_process_is_fenced_and_nothing_is_decided_twice_over_shm(self):
        self.frozen_worker_process_is_fenced("shm")

    def frozen_worker_process_is_fenced(self, transport):
        """SIGSTOP of the process of w0 and w1 for longer than the SFC's heartbeat timeout, then
        SIGCONT: the SFC gives their events to the others; the woken workers learn they were
        fenced, drop what they held (or their late answers are dropped by the SFC) and rejoin."""
        run, text, port = self.start_farm(
            transport=transport,
            worker="reject_time: {mean_us: 500}, accept_time: {mean_us: 800}",
            sfc="heartbeat_timeout_ms: 1000")
        status, ctx = http(control_port(text, "wa"), "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGSTOP)
        try:
            wait_until(lambda: sorted(self.results(port)["lost_workers"]) == ["w0", "w1"], 30,
                       "the SFC to declare the frozen w0 and w1 lost")
            at_loss = self.decided(port)
            wait_until(lambda: self.decided(port) >= at_loss + 1000, 60,
                       "1000 more events decided by the others")
        finally:
            os.kill(ctx["pid"], signal.SIGCONT)
        wait_until(lambda: sorted(self.results(port)["rejoined_workers"]) == ["w0", "w1"], 30,
                   "w0 and w1 to rejoin")
        wa = control_port(text, "wa")

        def answered_by_w0():
            status, body = http(wa, "GET", "/api/v1/apps/w0")
            r = body["results"]
            return r["events_accepted"] + r["events_rejected"]
        before = answered_by_w0()
        wait_until(lambda: answered_by_w0() >= before + 200, 60, "w0 to decide again")
        summary = self.finish(run)
        sfc = self.assert_every_event_decided_once(summary)
        apps = summary["applications"]
        w0, w1 = apps["w0"]["results"], apps["w1"]["results"]
        self.assertEqual(w0["fences"], 1, w0)
        self.assertEqual(w1["fences"], 1, w1)
        self.assertGreater(sfc["events_redispatched"], 0, sfc)
        # What the frozen workers held was given to others: each such event was either dropped
        # by its worker when the fence came, or answered late and dropped by the SFC.
        self.assertGreaterEqual(w0["events_dropped"] + w1["events_dropped"] +
                                sfc["answers_late"], sfc["events_redispatched"], sfc)
        with open(self.path(os.path.join("logs", "wa.log"))) as f:
            log = f.read()
        self.assertIn("the SFC declared this worker lost", log)
        print(f"\n{transport}: frozen w0, w1: {sfc['events_redispatched']} events dispatched again, "
              f"{w0['events_dropped'] + w1['events_dropped']} dropped by the workers, "
              f"{sfc['answers_late']} late answers dropped", flush=True)
        self.assert_written_once(summary["results"], sfc)

    def test_a_plugin_library_decides(self):
        lib = os.path.join(os.path.dirname(os.path.dirname(self.binary)), "lib",
                           "libdaqflow_farm_select.so")
        self.assertTrue(os.path.exists(lib), lib)
        text = farm_config("tcp", "tokens", sfc="count: 4000, stream_masks: [2]",
                           worker=f"processing: {{kind: plugin, library: {lib}, "
                                  f"config: \"every=20 keep=256\"}}")
        code, out, summary = self.run_config(self.write_config("farm.yaml", text), "--duration",
                                             "0", timeout=120)
        self.assertEqual(code, 0, out)
        sfc = self.assert_every_event_decided_once(summary)
        self.assertGreater(sfc["events_accepted"], 4000 / 20 / 3, sfc)
        self.assertLess(sfc["events_accepted"], 4000 / 20 * 3, sfc)
        report = self.assert_written_once(summary["results"], sfc)
        events = [e for f in report["files"] for e in f["event_list"]]
        self.assertTrue(all(e["trigger_bits"] & 1 for e in events))
        # Output: number, size and checksum (24 B), then the first 256 bytes of the event.
        self.assertTrue(all(e["output_size"] == 24 + 256 for e in events))
        streams = {f["bu"]: [e["trigger_bits"] for e in f["event_list"]] for f in report["files"]}
        self.assertTrue(all(b & 2 for b in streams.get("sfc0_stream0", [])))
        self.assertTrue(all(not b & 2 for b in streams.get("sfc0_unrouted", [])))

    def test_the_event_builder_feeds_the_farm_and_every_built_event_is_decided_once(self):
        """examples/farm.yaml: BUs with output {kind: farm} hand every built event to the SFC;
        the EVM's triggered events are built, taken by the SFC and decided, each once."""
        text = rewrite_ports(read_example("farm.yaml"))
        config = self.write_config("farm.yaml", text)
        run = self.start(["run", config, "--duration", "0", "--summary",
                          self.path("summary.json"), "--log-dir", self.path("logs")], "run.log")
        port = control_port(text, "sfc")
        wait_until(lambda: self.decided(port) >= 3000, 60, "3000 built events decided")
        summary = self.finish(run)
        sfc = self.assert_every_event_decided_once(summary)
        r = summary["results"]
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self.assertEqual(r["events_built"], sfc["events_decided"], r)
        self.assertEqual(r["events_written"], r["events_built"], "every built event taken over")
        self.assertEqual(sfc["events_duplicate"], 0, sfc)
        self.assert_written_once(r, sfc)

    def test_a_killed_bu_feeding_the_farm_loses_no_event_and_none_is_decided_twice(self):
        """examples/farm.yaml with bu2 SIGKILLed mid-run: the EVM gives its blocks to bu1; the
        events of those blocks that the SFC had already taken from bu2 come again from bu1 and
        are dropped by number, so every built event is decided once."""
        text = rewrite_ports(read_example("farm.yaml"))
        config = self.write_config("farm.yaml", text)
        run = self.start(["run", config, "--duration", "0", "--summary",
                          self.path("summary.json"), "--log-dir", self.path("logs")], "run.log")
        port = control_port(text, "sfc")
        wait_until(lambda: self.decided(port) >= 3000, 60, "3000 built events decided")
        status, ctx = http(control_port(text, "bu2"), "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)
        at_kill = self.decided(port)
        wait_until(lambda: self.decided(port) >= at_kill + 3000, 60,
                   "3000 more events decided, from bu1 alone")
        summary = self.finish(run)
        sfc = self.assert_every_event_decided_once(summary)
        r = summary["results"]
        self.assertEqual(r["lost_bus"], ["bu2"], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self.assertEqual(sfc["events_decided"], r["events_built"], (r, sfc))
        print(f"\nkilled bu2: {r['events_reassigned']} events re-assigned, "
              f"{sfc['events_duplicate']} taken twice and dropped", flush=True)
        self.assert_written_once(r, sfc)

    def test_a_plugin_that_cannot_load_is_a_clear_error(self):
        text = farm_config("tcp", "tokens",
                           worker="processing: {kind: plugin, library: /nonexistent.so}")
        code, out, _ = self.run_config(self.write_config("farm.yaml", text), "--duration", "1")
        self.assertNotEqual(code, 0, out)
        self.assertIn("cannot load '/nonexistent.so'", out)

    def test_the_old_spelling_of_a_plugin_is_refused_with_the_new_one(self):
        text = farm_config("tcp", "tokens", worker="processing: plugin, plugin: /x.so")
        path = self.write_config("farm.yaml", text)
        check = subprocess.run([self.binary, "check", path], capture_output=True, text=True)
        self.assertNotEqual(check.returncode, 0, check.stdout)
        self.assertIn("processing: {kind: plugin, library: PATH", check.stderr)
        self.assertIn("now part of 'processing'", check.stderr)


if __name__ == "__main__":
    unittest.main()
