"""Every shipped example ends clean: `daqflow run` of each file in examples/ (fresh ports, a short
run) halts normally, says `run ok`, and leaves every application Halted. An application that
fails while the run ends (a time-slice input that takes its manager's halt for a lost
connection) is a failed example, whatever the data on disk says."""

import os
import unittest

from daqflow_testlib import DaqflowTestCase, example_files, rewrite_ports


class Examples(DaqflowTestCase):
    def test_every_example_ends_with_every_application_halted(self):
        files = example_files()
        self.assertTrue(files, "examples/ has no configuration")
        for path in files:
            name = os.path.basename(path)
            with self.subTest(example=name):
                with open(path) as f:
                    text = rewrite_ports(f.read())
                config = self.write_config(name, text)
                code, out, summary = self.run_config(config, "--duration", "3", timeout=180)
                # The run's own account of a failure first: the results that follow it are long.
                failure = "\n".join(line for line in out.splitlines()
                                     if "FAILED" in line or "failed" in line)
                self.assertEqual(code, 0, failure + "\n" + out[-3000:])
                self.assertIn("run ok", out)
                self.assertIsNotNone(summary, out[-3000:])
                self.assertEqual(summary["status"], "ok", summary.get("failure"))
                self.assertEqual(summary["lost"], [], summary["lost"])
                apps = summary["applications"]
                self.assertTrue(apps, f"{name}: no application in the summary")
                not_halted = {i: (a["state"], a["reason"]) for i, a in apps.items()
                              if a["state"] != "Halted"}
                self.assertEqual(not_halted, {}, f"{name}: applications not Halted at the end")
                # Each run writes into its own output folder (./run-data of the test's directory).
                data = self.path("run-data")
                if os.path.exists(data):
                    os.rename(data, self.path(f"run-data-{name}"))


if __name__ == "__main__":
    unittest.main()
