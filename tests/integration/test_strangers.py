"""No stranger on the data plane: processes of other runs that dial a running stream's sink (a
second cluster whose configuration names the sink's address and port, and a leftover executive
of an earlier run with the same run number) are refused by the sink, counted and logged naming
the address and the run they claim, and the run's own data goes on untouched: the sink checks
the sequence and pattern of every message."""

import json
import re
import unittest

from daqflow_testlib import (PORTS, DaqflowTestCase, control_ports, http, read_example,
                             rewrite_ports, set_default_transport, wait_until)


class Strangers(DaqflowTestCase):
    def sink_endpoint(self, port):
        status, snap = http(port, "GET", "/api/v1/snapshot")
        self.assertEqual(status, 200, snap)
        (sink,) = [a for a in snap["applications"] if a["id"] == "sink0"]
        return sink

    def intruder(self, text, name, run_number, key):
        """`daqflow exec` of the source context of a copy of the run's configuration whose source
        has ports of its own (so that it runs beside the run's) and the given run number,
        configured by hand with `key` (16 hex digits, as `daqflow run` sends one): its source
        dials the run's sink as it is configured (and fails when it is refused)."""
        head, sep, tail = text.partition("  - name: sink")
        taken = set(control_ports(text))
        control = PORTS.take(avoid=taken)
        data = PORTS.take(8, avoid=taken | {control})
        head = re.sub(r"control_port: \d+", f"control_port: {control}", head)
        head = re.sub(r"data_port: \d+", f"data_port: {data}", head)
        config = self.write_config(f"{name}.yaml", head + sep + tail)
        proc = self.start(["exec", config, "--context", "source", "--run-number", str(run_number)],
                          f"{name}.log")
        self.wait_http(control, proc)
        status, body = http(control, "POST", "/api/v1/fsm/Configure", body={"run_key": key})
        self.assertEqual(status, 202, body)
        return proc

    def test_other_runs_that_dial_the_sink_are_refused_and_the_runs_data_is_untouched(self):
        text = set_default_transport(rewrite_ports(read_example("stream-1to1.yaml")), "tcp")
        config = self.write_config("run.yaml", text)
        _, sink_port = control_ports(text)
        run = self.start(["run", config, "--duration", "0", "--summary", self.path("summary.json"),
                          "--log-dir", self.path("logs")], "run.log")
        def receiving():
            self.assertIsNone(run.poll(), self.output_of("run.log"))
            try:
                sink = self.sink_endpoint(sink_port)
            except OSError:  # not listening yet
                return False
            return sink["state"] == "Enabled" and \
                (sink["endpoint"] or {}).get("messages_received", 0) > 0
        wait_until(receiving, 60, "the run's sink receiving")

        cases = (
            # A second cluster (run 2) whose configuration names this run's sink.
            ("crossed", 2, "00000000000000b2",
             r"tcp endpoint of 'sink0': refused a connection from 127\.0\.0\.1:\d+ claiming to "
             r"be 'src0' of run 2: this endpoint belongs to run 1"),
            # A leftover of an earlier run with the same number, under that run's key.
            ("leftover", 1, "00000000000000a1",
             r"tcp endpoint of 'sink0': refused a connection from 127\.0\.0\.1:\d+ claiming to "
             r"be 'src0' of run 1 under another run key: this endpoint belongs to run 1"),
        )
        refused = 0
        for name, run_number, key, said in cases:
            with self.subTest(intruder=name):
                proc = self.intruder(text, name, run_number, key)
                wait_until(lambda: self.sink_endpoint(sink_port)["endpoint"]["strangers"] > refused,
                           30, f"the sink to refuse the {name} source")
                refused = self.sink_endpoint(sink_port)["endpoint"]["strangers"]
                wait_until(lambda: re.search(said, self.output_of("logs/sink.log")), 10,
                           f"the sink's log to name the {name} source")
                proc.terminate()
                proc.wait(30)
        status, metrics = http(sink_port, "GET", "/metrics")
        self.assertEqual(status, 200)
        counted = re.search(r'daqflow_transport_strangers_total\{[^}]*application="sink0"[^}]*\} '
                            r'(\d+)', metrics)
        self.assertIsNotNone(counted, metrics)
        self.assertEqual(int(counted.group(1)), refused)
        endpoint = self.sink_endpoint(sink_port)["endpoint"]
        self.assertEqual(endpoint["peer_errors"], 0, endpoint)
        self.assertEqual(endpoint["rejected"], 0, endpoint)

        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        with open(self.path("summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        sink = summary["applications"]["sink0"]
        self.assertGreater(sink["metrics"].get("messages_in", 0), 0)
        self.assertEqual(sink["results"].get("errors_sequence"), 0, sink)
        self.assertEqual(sink["results"].get("errors_pattern"), 0, sink)
        for app_id, app in summary["applications"].items():
            self.assertEqual(app["state"], "Halted", f"{app_id}: {app}")
            for metric, value in app["metrics"].items():
                if "error" in metric:
                    self.assertEqual(value, 0, f"{app_id} metric {metric}")


if __name__ == "__main__":
    unittest.main()
