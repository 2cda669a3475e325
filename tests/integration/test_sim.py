"""`daqflow sim`: a configuration file's real applications on a simulated platform, from the command
line, with its summary; and the sim transport refused outside a simulation."""

import json
import re
import unittest

from daqflow_testlib import DaqflowTestCase, read_example, rewrite_ports, set_default_transport


def discard_outputs(text):
    return re.sub(r"output: \{kind: file[^}]*\}", "output: {kind: discard}", text)


class Simulation(DaqflowTestCase):
    def test_the_example_event_builder_simulated_with_a_lost_builder_unit(self):
        config = self.write_config("local.yaml", discard_outputs(read_example("local.yaml")))
        summary_path = self.path("sim.json")
        code, out = self.daqflow(["sim", config, "--duration", "0.2", "--link-gbps", "10",
                                  "--kill", "bu2@0.1", "--summary", summary_path], timeout=300)
        self.assertEqual(code, 0, out)
        with open(summary_path) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        r = summary["results"]
        self.assertGreater(r["events_triggered"], 0, r)
        self.assertEqual(r["events_built"], r["events_triggered"], r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["lost_bus"], ["bu2"], r)
        self.assertEqual(summary["applications"]["bu2"]["state"], "Lost")
        sim = summary["simulation"]
        self.assertGreaterEqual(sim["simulated_s"], 0.2)
        self.assertEqual(sim["hosts"], len(re.findall(r"^  - name:", read_example("local.yaml"),
                                                      re.M)))

    def test_bench_sim_sweeps_a_small_builder_into_result_files(self):
        out_dir = self.path("bench")
        code, out = self.daqflow(["bench", "sim", "--kind", "evb,rubu", "--nodes", "4,8",
                                  "--payload-scale", "16", "--duration", "0.005",
                                  "--out", out_dir], timeout=600)
        self.assertEqual(code, 0, out)
        with open(out_dir + "/sim-star-nodes.json") as f:
            result = json.load(f)
        self.assertEqual(result["bench"], "sim")
        self.assertIn("--payload-scale 16", result["command"])
        rows = [dict(zip(result["columns"], row)) for row in result["rows"]]
        self.assertEqual([(r["kind"], r["nodes"]) for r in rows],
                         [("evb", 4), ("evb", 8), ("rubu", 4), ("rubu", 8)])
        for r in rows:
            self.assertGreater(r["event_rate_hz"], 0, r)
            # The window's throughput, scaled back from the phantom payloads, cannot beat the
            # 100 Gb/s link each BU receives on.
            self.assertGreater(r["link_share"], 0.05, r)
            self.assertLessEqual(r["link_share"], 1.0, r)
            self.assertGreater(r["evm_cpu_load"], 0, r)
            self.assertLessEqual(r["evm_cpu_load"], 1.0, r)
            self.assertGreater(r["assembly_p50_us"], 0, r)
            self.assertLessEqual(r["assembly_p50_us"], r["assembly_p99_us"], r)
            self.assertEqual(r["bus"], r["nodes"] // 2 if r["kind"] == "evb" else r["nodes"], r)
        with open(out_dir + "/sim-star-nodes.svg") as f:
            self.assertIn("<svg", f.read())

    def test_bad_options_are_refused_with_the_reason(self):
        code, out = self.daqflow(["sim", "--rus", "2", "--bus", "2", "--kill", "nobody@1"])
        self.assertEqual(code, 2, out)
        self.assertIn("no application 'nobody'", out)
        code, out = self.daqflow(["sim", "--rus", "2", "--bus", "2", "--cpu", "guess"])
        self.assertEqual(code, 2, out)
        self.assertIn("--cpu: expected measured or fixed", out)
        code, out = self.daqflow(["sim", "--rus", "2", "--bus", "2", "--platform",
                                  self.path("missing.xml")])
        self.assertEqual(code, 2, out)
        self.assertIn("missing.xml", out)

    def test_the_sim_transport_is_refused_outside_a_simulation(self):
        text = set_default_transport(rewrite_ports(read_example("stream-1to1.yaml")), "sim")
        config = self.write_config("stream-sim.yaml", text)
        code, out, summary = self.run_config(config, "--duration", "1", timeout=120)
        self.assertNotEqual(code, 0, out)
        self.assertIn("runs inside a simulation only", out + json.dumps(summary))


if __name__ == "__main__":
    unittest.main()
