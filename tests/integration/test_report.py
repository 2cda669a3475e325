"""A recording and its report (docs/monitoring.md, Recording): `daqflow run examples/local.yaml
--record DIR` (ports of the test, the BUs discarding) writes one JSON line per sample and context
and run.json; `daqflow report DIR` turns them into one HTML page whose event-rate plot shows the
run's event rate. A second run appends to the same files."""

import json
import os
import re
import unittest

from daqflow_testlib import DaqflowTestCase, read_example, rewrite_ports

CONTEXTS = ["evm", "ru1", "ru2", "ru3", "bu1", "bu2"]


class Report(DaqflowTestCase):
    def read_samples(self, record, context):
        with open(os.path.join(record, f"{context}.jsonl")) as f:
            return [json.loads(line) for line in f if line.strip()]

    def test_a_recorded_run_becomes_a_report_of_its_event_rate(self):
        text = rewrite_ports(read_example("local.yaml"))
        text = re.sub(r"output: \{kind: file[^}]*\}", "output: {kind: discard}", text)
        config = self.write_config("local.yaml", text)
        record = self.path("record")
        code, out, summary = self.run_config(config, "--duration", "3", "--record", record)
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", out)
        self.assertIn(f"recording: {record}", out)

        for context in CONTEXTS:
            samples = self.read_samples(record, context)
            self.assertGreaterEqual(len(samples), 3, f"{context}: one sample a second")
            self.assertEqual(samples[-1]["apps"][0]["state"], "Halted",
                             "the last sample shows how the context ended")
        evm = [s["apps"][0] for s in self.read_samples(record, "evm")]
        self.assertTrue(any(a["state"] == "Enabled" for a in evm))
        built = [a["counters"]["events_built"] for a in evm if "events_built" in a["counters"]]
        self.assertEqual(built, sorted(built), "a counter only grows during a run")
        self.assertEqual(built[-1], summary["results"]["events_built"])
        with open(os.path.join(record, "run.json")) as f:
            run = json.load(f)
        self.assertEqual(run["summary"]["status"], "ok")
        self.assertTrue(any("enabling rank" in n["text"] for n in run["notes"]), run["notes"])

        code, out = self.daqflow(["report", record])
        self.assertEqual(code, 0, out)
        with open(os.path.join(record, "report.html")) as f:
            html = f.read()
        rate = re.search(r'<figure data-metric="events_built" data-kind="rate" '
                         r'data-peak="([0-9.e+]+)">(.*?)</figure>', html, re.S)
        self.assertIsNotNone(rate, "the report has an event-rate plot")
        self.assertGreater(float(rate.group(1)), 0, "its peak is the run's event rate")
        self.assertIn("<polyline", rate.group(2))
        for app in ("evm0", "bu1", "bu2"):
            self.assertIn(f">{app}</text>", rate.group(2), f"{app} is in the event-rate plot")
        self.assertIn("enabling rank", html, "the run's notes")
        self.assertIn("Enabled", html, "the states over the run")
        self.assertIn('data-metric="events_in_flight" data-kind="value"', html)

        # A second run into the same folder appends.
        code, out, _ = self.run_config(config, "--duration", "1", "--record", record)
        self.assertEqual(code, 0, out)
        self.assertGreater(len(self.read_samples(record, "evm")), len(evm))
        code, out = self.daqflow(["report", record, "--output", self.path("again.html")])
        self.assertEqual(code, 0, out)
        self.assertTrue(os.path.exists(self.path("again.html")))

        code, out = self.daqflow(["report", self.path("nothing-here")])
        self.assertNotEqual(code, 0)
        self.assertIn("is not a folder", out)


if __name__ == "__main__":
    unittest.main()
