"""`daqflow run` of examples/roundtrip.yaml over TCP: the sweep ends by itself and the summary
holds the fit tau(P) = c*P + tau0."""

import unittest

from daqflow_testlib import DaqflowTestCase, read_example, rewrite_ports, set_default_transport, \
    set_param


class RoundTripRun(DaqflowTestCase):
    def test_sweep_over_tcp_fits_latency_and_bandwidth(self):
        text = rewrite_ports(read_example("roundtrip.yaml"))
        text = set_default_transport(text, "tcp")
        # A short sweep, 64 B to 256 KiB with 500 round trips per size, fitted over every size:
        # the small sizes pin the intercept tau0 and the median of 500 round trips is robust to
        # a busy machine, where an extrapolation from a few large sizes is not.
        text = set_param(text, "iterations", 500)
        text = set_param(text, "max_size", 1 << 18)
        text = set_param(text, "fit_min_size", 64)
        config = self.write_config("roundtrip.yaml", text)

        code, out, summary = self.run_config(config, "--duration", "90", timeout=150)

        self.assertEqual(code, 0, out)
        self.assertIsNotNone(summary, out)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        self.assertIsNone(summary["failure"])
        fit = summary["results"].get("fit")
        self.assertIsInstance(fit, dict, summary["results"])
        for key in ("tau0_us", "c_us_per_kb", "b_inf_mb_s"):
            self.assertIsInstance(fit.get(key), (int, float), f"fit.{key}: {fit}")
            self.assertGreater(fit[key], 0, f"fit.{key}: {fit}")
        # Ended because the sweep finished, not because the 90 s ran out.
        self.assertLess(summary["duration_s"], 90, out)
        for app in summary["applications"].values():
            self.assertEqual(app["state"], "Halted", app)
        for ctx in summary["contexts"]:
            self.assertEqual(ctx["exit_code"], 0, ctx)
        self.assertIn("tau0_us", out)  # the human summary prints the results


if __name__ == "__main__":
    unittest.main()
