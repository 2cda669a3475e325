"""The stream and event-builder examples over every transport daqflow knows, as separate processes
(issue 5: no application changes with the transport). A transport this build left out is a
failure here, never a skipped test: the build is expected to have them all (scripts/bootstrap
installs their libraries)."""

import re
import unittest

from daqflow_testlib import PATIENT_BU_MS, DaqflowTestCase, read_example, rewrite_ports, \
    set_bu_params, set_default_transport

# inproc joins every context into one process; the others run one process per context.
TRANSPORTS = ("tcp", "shm", "ucx", "ofi", "mpi")


class EveryTransport(DaqflowTestCase):
    def built_transports(self):
        code, out = self.daqflow(["transports"])
        self.assertEqual(code, 0, out)
        built = re.search(r"^built: (.*)$", out, re.M)
        self.assertIsNotNone(built, out)
        return built.group(1).split()

    def test_this_build_has_every_transport(self):
        built = self.built_transports()
        for transport in ("inproc",) + TRANSPORTS:
            self.assertIn(transport, built, f"transport {transport} was not built")

    def check_stream(self, transport):
        text = set_default_transport(rewrite_ports(read_example("stream-1to1.yaml")), transport)
        config = self.write_config(f"stream-{transport}.yaml", text)
        code, out, summary = self.run_config(config, "--duration", "2", timeout=120,
                                             logs=f"logs-stream-{transport}")
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        sink = summary["applications"]["sink0"]
        self.assertGreater(sink["metrics"].get("messages_in", 0), 0, "the sink received nothing")
        self.assertEqual(sink["results"].get("errors_sequence"), 0)
        self.assertEqual(sink["results"].get("errors_pattern"), 0)
        self.assertGreater(summary["results"].get("throughput_mb_s", 0), 0)

    def check_event_builder(self, transport):
        text = rewrite_ports(read_example("local.yaml"))
        text = re.sub(r"output: \{kind: file[^}]*\}", "output: {kind: discard}", text)
        text = set_bu_params(set_default_transport(text, transport), timeout_ms=PATIENT_BU_MS)
        config = self.write_config(f"local-{transport}.yaml", text)
        code, out, summary = self.run_config(config, "--duration", "3", timeout=180,
                                             logs=f"logs-evb-{transport}")
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        r = summary["results"]
        self.assertGreater(r["events_built"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["bus"]["bu1"] + r["bus"]["bu2"], r["events_built"])
        for bu in ("bu1", "bu2"):
            self.assertGreater(r["bus"][bu], 0, f"{bu} built nothing over {transport}")
            self.assertEqual(summary["applications"][bu]["results"]["events_corrupted"], 0)

    def test_stream_over_every_transport(self):
        built = self.built_transports()
        for transport in TRANSPORTS:
            with self.subTest(transport=transport):
                self.assertIn(transport, built, f"transport {transport} was not built")
                self.check_stream(transport)

    def test_event_builder_over_every_transport(self):
        built = self.built_transports()
        for transport in TRANSPORTS:
            with self.subTest(transport=transport):
                self.assertIn(transport, built, f"transport {transport} was not built")
                self.check_event_builder(transport)


if __name__ == "__main__":
    unittest.main()
