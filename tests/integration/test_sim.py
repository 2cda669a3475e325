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

    def test_bench_sim_compares_chaotic_and_scheduled_time_slice_building(self):
        out_dir = self.path("bench-ts")
        code, out = self.daqflow(["bench", "sim", "--kind", "ts-chaotic,ts-scheduled",
                                  "--nodes", "4,8", "--network", "fifo", "--manager",
                                  "--contribution", "65536", "--payload-scale", "16",
                                  "--duration", "0.005", "--out", out_dir], timeout=600)
        self.assertEqual(code, 0, out)
        with open(out_dir + "/sim-star-fifo-ts-manager-nodes.json") as f:
            result = json.load(f)
        self.assertIn("--manager", result["command"])
        rows = [dict(zip(result["columns"], row)) for row in result["rows"]]
        self.assertEqual([(r["kind"], r["nodes"]) for r in rows],
                         [("ts-chaotic", 4), ("ts-chaotic", 8), ("ts-scheduled", 4),
                          ("ts-scheduled", 8)])
        for r in rows:
            self.assertGreater(r["event_rate_hz"], 0, r)
            self.assertGreater(r["link_share"], 0.05, r)
            self.assertLessEqual(r["link_share"], 1.0, r)
            # The manager's assignments and grants, the acknowledgements and every header are
            # traffic too: some of it, not most.
            self.assertGreater(r["data_share"], 0.5, r)
            self.assertLess(r["data_share"], 1.0, r)

    def test_control_scale_gives_control_messages_the_share_of_the_traffic_asked(self):
        """Round-robin time-slice building: the acknowledgements (16-byte payloads, one per
        contribution of 64 KiB) are a fraction of a percent of the bytes; at 500 times their
        size, about a tenth."""
        shares = {}
        for scale in ("1", "500"):
            path = self.path(f"ts-{scale}.json")
            code, out = self.daqflow(["sim", "--ts", "4", "--network", "fifo", "--contribution",
                                      "65536", "--payload-scale", "16", "--control-scale", scale,
                                      "--duration", "0.005", "--summary", path], timeout=300)
            self.assertEqual(code, 0, out)
            with open(path) as f:
                summary = json.load(f)
            self.assertEqual(summary["simulation"]["control_scale"], float(scale))
            window = summary["simulation"]["window"]
            self.assertGreater(window["event_rate_hz"], 0, window)
            shares[scale] = window["data_share"]
        self.assertGreater(shares["1"], 0.99, shares)
        self.assertGreater(shares["500"], 0.85, shares)
        self.assertLess(shares["500"], 0.95, shares)

    def test_the_two_network_models_agree_on_a_builder_bound_by_its_links(self):
        # RUBU of 8 nodes on 10 Gb/s links, 2 KiB fragments carried at 128 B, 8 events per block
        # and 4 blocks in flight per BU: the flow model shares each link among its transfers,
        # the fifo model sends one message after the other; the throughput is the same within
        # 15% (docs/simulation.md: where the two part).
        rates = {}
        for network in ("flow", "fifo"):
            summary_path = self.path(f"sim-{network}.json")
            code, out = self.daqflow(["sim", "--rubu", "8", "--feds", "2", "--fragment", "2048",
                                      "--events-per-request", "8", "--blocks-in-flight", "4",
                                      "--payload-scale", "16", "--link-gbps", "10",
                                      "--cpu", "fixed", "--send-message-ns", "1000",
                                      "--recv-message-ns", "1000", "--duration", "0.05",
                                      "--network", network, "--summary", summary_path],
                                     timeout=300)
            self.assertEqual(code, 0, out)
            with open(summary_path) as f:
                summary = json.load(f)
            self.assertEqual(summary["status"], "ok", summary.get("failure"))
            self.assertEqual(summary["simulation"]["network"], network)
            r = summary["results"]
            self.assertEqual(r["events_built"], r["events_triggered"], r)
            self.assertEqual(r["events_lost"], 0, r)
            rates[network] = summary["simulation"]["window"]["throughput_mb_s"]
        # Each node receives 7/8 of every event over its 1.25 GB/s link.
        bound = 8 * 1250 / (7 / 8)
        for network, rate in rates.items():
            self.assertLessEqual(rate, bound * 1.02, (network, rates))
            self.assertGreater(rate, bound * 0.4, (network, rates))
        self.assertLess(abs(rates["fifo"] / rates["flow"] - 1), 0.15, rates)

    def test_bad_options_are_refused_with_the_reason(self):
        code, out = self.daqflow(["sim", "--rus", "2", "--bus", "2", "--kill", "nobody@1"])
        self.assertEqual(code, 2, out)
        self.assertIn("no application 'nobody'", out)
        code, out = self.daqflow(["sim", "--rus", "2", "--bus", "2", "--cpu", "guess"])
        self.assertEqual(code, 2, out)
        self.assertIn("--cpu: expected measured or fixed", out)
        code, out = self.daqflow(["sim", "--rus", "2", "--bus", "2", "--network", "packets"])
        self.assertNotEqual(code, 0, out)
        self.assertIn("--network", out)
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
