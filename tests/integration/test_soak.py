"""The two-minute soak (docs/reliability.md, "Soak"): scripts/soak runs the event builder of
examples/local.yaml at full rate over tcp with discard outputs and samples every process once a
second. The memory and the open descriptors of every process must not grow between the second
and the last sixth of the run; the event rate is reported, not asserted (speed is for
benchmarks, and this suite may share the machine with other work).

Ports: from the test library's blocks (rewrite_ports)."""

import json
import os
import re
import subprocess
import sys
import unittest

from daqflow_testlib import DaqflowTestCase, read_example, rewrite_ports



class Soak(DaqflowTestCase):
    def test_two_minutes_at_full_rate_keep_memory_and_descriptors_flat(self):
        text = read_example("local.yaml")
        text = re.sub(r"output: \{kind: file[^}]*\}", "output: {kind: discard}", text)
        # Ports from the test library's reserved blocks (26000-29999): a fixed port in the
        # ephemeral range (32768 and up) can be taken by any outgoing connection of the machine.
        text = rewrite_ports(text)
        config = self.write_config("soak.yaml", text)
        out = self.path("soak")
        root = os.environ.get("DAQFLOW_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
        env = dict(os.environ, BUILD=os.path.dirname(os.path.dirname(self.binary)))
        proc = subprocess.run([sys.executable, os.path.join(root, "scripts", "soak"), "--minutes",
                               "2", "--config", config, "--out", out], env=env,
                              capture_output=True, text=True, timeout=280)
        print("\n" + proc.stdout, flush=True)
        self.assertIn(proc.returncode, (0, 1), proc.stdout + proc.stderr)
        with open(os.path.join(out, "soak.json")) as f:
            report = json.load(f)
        self.assertEqual(report["run_exit"], 0, proc.stdout)
        self.assertGreater(report["samples"], 100)
        memory = [f for f in report["figures"]
                  if "RSS" in f["figure"] or "descriptors" in f["figure"]]
        self.assertEqual(len(memory), 12, "six processes, two figures each")
        for fig in memory:
            self.assertTrue(fig["flat"], f"{fig['figure']}: {fig['second_window']:.0f} -> "
                                         f"{fig['last_window']:.0f} ({fig['change']:+.2%})")


if __name__ == "__main__":
    unittest.main()
