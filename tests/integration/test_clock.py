"""Clock synchronisation by round trips with real processes (docs/timeslices.md): a clock master
and two nodes, one of whose local clock is made to run 2.5 ms ahead and 50 ppm fast. The master
recovers the injected drift within three times its reported precision, and each node's
corrected clock is within the path's asymmetry and three times its precision of this host's
monotonic clock, the master's.

The three processes share one CPU. Each node reads its true error against the monotonic clock
where it runs, and on a virtual machine the CPUs' clocks need not agree to the microsecond: CI
once read c2 12.3 us off with round trips of at most 17.5 us, more than any asymmetry of the path
explains (an error beyond half the round trip needs one leg shorter than nothing), while c1 was
1 us off in the same run."""

import os
import unittest

from daqflow_testlib import PORTS, DaqflowTestCase, http, rewrite_ports, wait_until


def clock_config(transport, multicast=False):
    """With multicast, the corrections go by UDP multicast and c2 drops 10% of the datagrams."""
    master_extra = c2_extra = ""
    if multicast:
        port = PORTS.take(1)
        master_extra = (f", multicast: {{group: 239.255.{(port >> 8) & 255}.{port & 255}, "
                        f"port: {port}}}")
        c2_extra = ", multicast_drop: 0.1"
    return rewrite_ports(
        f"run: {{number: 1, output: ./run-data}}\n"
        f"transports: {{default: {transport}}}\n"
        f"contexts:\n"
        f"  - {{name: master, host: 127.0.0.1, control_port: 1, data_port: 2, applications: "
        f"[{{type: clock_master, id: cm, nodes: [c1, c2], interval_ms: 50, probes: 8, "
        f"window: 40{master_extra}}}]}}\n"
        f"  - {{name: n1, host: 127.0.0.1, control_port: 3, data_port: 4, applications: "
        f"[{{type: clock_client, id: c1, master: cm}}]}}\n"
        f"  - {{name: n2, host: 127.0.0.1, control_port: 5, data_port: 6, applications: "
        f"[{{type: clock_client, id: c2, master: cm, inject_offset_us: 2500, "
        f"inject_drift_ppm: 50{c2_extra}}}]}}\n")


def port_of(text, ctx):
    for line in text.splitlines():
        if f"name: {ctx}," in line:
            return int(line.split("control_port: ")[1].split(",")[0])
    raise KeyError(ctx)


class ClockSync(DaqflowTestCase):
    def setUp(self):
        super().setUp()
        # The processes the run starts inherit this process's CPU.
        allowed = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {min(allowed)})
        self.addCleanup(os.sched_setaffinity, 0, allowed)

    def results(self, port, app):
        status, body = http(port, "GET", f"/api/v1/apps/{app}")
        self.assertEqual(status, 200, body)
        return body["results"]

    def check(self, transport, multicast=False):
        text = clock_config(transport, multicast)
        run = self.start(["run", self.write_config("clock.yaml", text), "--duration", "0",
                          "--summary", self.path("summary.json"), "--log-dir",
                          self.path("logs")], "run.log")
        master = port_of(text, "master")

        def rounds():
            try:
                nodes = self.results(master, "cm").get("nodes", {})
                return min((n["rounds"] for n in nodes.values()), default=0)
            except OSError:
                return 0
        wait_until(lambda: rounds() >= 40, 60, "40 rounds for each node")
        cm = self.results(master, "cm")
        nodes = cm["nodes"]
        c1 = self.results(port_of(text, "n1"), "c1")
        c2 = self.results(port_of(text, "n2"), "c2")
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        if multicast:
            self.check_multicast(cm, c1, c2)
        print(f"\n{transport}: drift {nodes['c2']['drift_ppm']:.3f} ppm "
              f"(+- {nodes['c2']['drift_precision_ppm']:.3f}), precision "
              f"{nodes['c1']['precision_ns']:.0f} / {nodes['c2']['precision_ns']:.0f} ns, "
              f"corrected clock error {c1['error_ns']} / {c2['error_ns']} ns, lowest round trip "
              f"{nodes['c1']['min_delay_ns']:.0f} / {nodes['c2']['min_delay_ns']:.0f} ns, highest "
              f"{nodes['c1']['max_delay_ns']:.0f} / {nodes['c2']['max_delay_ns']:.0f} ns",
              flush=True)
        self.assertGreater(c2["corrections"], 0, c2)
        # The injection is real: c2's local clock is 2.5 ms ahead (and more, it runs fast).
        self.assertGreater(c2["local_minus_monotonic_ns"], 2_500_000, c2)
        self.assertAlmostEqual(nodes["c2"]["drift_ppm"], 50,
                               delta=3 * nodes["c2"]["drift_precision_ppm"])
        self.assertAlmostEqual(nodes["c1"]["drift_ppm"], 0,
                               delta=3 * nodes["c1"]["drift_precision_ppm"])
        # Both corrected clocks carry the path's asymmetry: in each round at most half that
        # round's round trip, so a constant one (a node slower to answer than the master to read
        # the answer) up to half the window's highest; the injected offset and drift are gone
        # from c2's within the precisions. Each against its own node's figures (c1 once was 900
        # ns off against c2's precision, and 941 ns against half its lowest round trip, 331 ns
        # over shm, plus three times its precision). The asymmetry is each node's own: over shm
        # c1 read 0.87-1.14 us behind in seven runs and c2 mostly within 0.3 us, so the two errors
        # need not agree within the precisions (they were 1050 ns apart against 923).
        for name, c in (("c1", c1), ("c2", c2)):
            self.assertLessEqual(abs(c["error_ns"]), nodes[name]["max_delay_ns"] / 2 +
                                 3 * nodes[name]["precision_ns"], (name, c, nodes[name]))

    def check_multicast(self, cm, c1, c2):
        """Every correction reached its node: c2 lost some datagrams and got them back by NACK,
        none is lost after the retry; the master sent none over the transport."""
        sent = cm["multicast"]
        print(f"\nmulticast corrections: {sent['sent']} sent, {sent['repairs_sent']} repairs; "
              f"c2 lost {c2['multicast']['lost_before_retry']} before retry, "
              f"{c2['multicast']['lost_after_retry']} after", flush=True)
        self.assertEqual(sent["corrections_unicast"], 0, sent)
        for c in (c1, c2):
            self.assertEqual(c["multicast"]["lost_after_retry"], 0, c)
            # Each node reads every correction (both nodes'); it applies its own.
            self.assertGreater(c["multicast"]["delivered"], 0, c)
            self.assertGreaterEqual(c["corrections"], 30, c)
        self.assertEqual(c1["multicast"]["lost_before_retry"], 0, c1)
        self.assertGreater(c2["multicast"]["dropped_injected"], 0, c2)
        self.assertGreater(c2["multicast"]["lost_before_retry"], 0, c2)
        self.assertGreater(c2["multicast"]["recovered"], 0, c2)
        self.assertGreater(sent["repairs_sent"], 0, sent)

    def test_corrections_by_multicast_with_retry(self):
        self.check("tcp", multicast=True)

    def test_injected_offset_and_drift_are_recovered_over_tcp(self):
        self.check("tcp")

    def test_injected_offset_and_drift_are_recovered_over_shm(self):
        self.check("shm")


if __name__ == "__main__":
    unittest.main()
