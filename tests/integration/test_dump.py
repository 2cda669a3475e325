"""`daqflow dump` on the files of a real run: it counts exactly the events the run's summary says
were written and verifies them (sidecars, checksums, every record's CRC32C, every FED fragment);
a damaged file makes it fail naming the file and the event; a file without its sidecar is listed
as incomplete and not counted."""

import json
import os
import re
import shutil
import unittest

from daqflow_testlib import DaqflowTestCase, rewrite_ports

# An EVM and a RU emulating FEDs (0-1 and 100-102), two BUs writing files of at most 150 events.
CONFIG = """\
run: {{number: 12, output: {output}}}
transports: {{default: tcp, max_message_size: 4194304}}
contexts:
  - name: evm
    host: 127.0.0.1
    control_port: 9700
    data_port: 9800
    applications:
      - {{type: evm, id: evm0, rus: [ru1], bus: [bu1, bu2], feds: 2, trigger_rate_hz: 1500,
         fragment_size: {{dist: lognormal, mean: 512, sd: 256, min: 64, max: 4096}}}}
  - name: ru1
    host: 127.0.0.1
    control_port: 9701
    data_port: 9801
    applications:
      - {{type: ru, id: ru1, evm: evm0, feds: 3,
         fragment_size: {{dist: lognormal, mean: 512, sd: 256, min: 64, max: 4096}}}}
  - name: bu1
    host: 127.0.0.1
    control_port: 9702
    data_port: 9802
    applications:
      - {{type: bu, id: bu1, evm: evm0, events_per_request: 16,
         output: {{kind: file, max_file_events: 150}}}}
  - name: bu2
    host: 127.0.0.1
    control_port: 9703
    data_port: 9803
    applications:
      - {{type: bu, id: bu2, evm: evm0, events_per_request: 16,
         output: {{kind: file, max_file_events: 150}}}}
"""


class Dump(DaqflowTestCase):
    def run_and_write(self):
        self.data = self.path("data")
        config = self.write_config("dump.yaml", rewrite_ports(CONFIG.format(output=self.data)))
        code, out, summary = self.run_config(config, "--duration", "2")
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", summary)
        return summary["results"]["events_written"]

    def test_dump_counts_and_verifies_exactly_what_the_run_wrote(self):
        written = self.run_and_write()
        self.assertGreater(written, 300, "enough events for several files per BU")
        sidecars = [n for n in os.listdir(self.data) if n.endswith(".json")]
        self.assertFalse([n for n in os.listdir(self.data) if n.endswith(".part")])

        code, out = self.daqflow(["dump", self.data])
        self.assertEqual(code, 0, out)
        self.assertIn(f"{written} events in {len(sidecars)} files, all verified", out)
        self.assertRegex(out, r"run000012_bu1_0000\.dqf: run 12, bu1, file 0: 150 events")
        self.assertRegex(out, r"run000012_bu2_0000\.dqf: run 12, bu2, file 0: 150 events")

        code, out = self.daqflow(["dump", self.data, "--json", "--events"])
        self.assertEqual(code, 0, out)
        report = json.loads(out)
        self.assertTrue(report["all_verified"])
        self.assertEqual(report["events"], written)
        numbers = sorted(e["event"] for f in report["files"] for e in f["event_list"])
        self.assertEqual(numbers, list(range(written)), "every event once, across both BUs")
        for f in report["files"]:
            for e in f["event_list"]:
                self.assertEqual(e["feds"], [0, 1, 100, 101, 102], e)
                self.assertEqual(e["flags"], 0)

        code, out = self.daqflow(["dump", os.path.join(self.data, "run000012_bu1_0001.dqf"),
                                  "--events"])
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"  event \d+  size \d+  FEDs 0-1,100-102 \(5\)  flags -")
        self.assertIn("150 events in 1 file, all verified", out)

    def test_dump_names_the_file_and_event_that_do_not_verify(self):
        self.run_and_write()
        victim = os.path.join(self.data, "run000012_bu2_0000.dqf")
        with open(victim, "r+b") as f:
            data = bytearray(f.read())
            # The first record starts after the 32-byte file header ("bu2": 24 + 8); its data
            # after the 32-byte record header. Damage a payload byte of that first event.
            event = int.from_bytes(data[32 + 8:32 + 16], "little")
            data[32 + 32 + 100] ^= 0x01
            f.seek(0)
            f.write(data)
        code, out = self.daqflow(["dump", self.data])
        self.assertNotEqual(code, 0, out)
        self.assertIn(f"{victim}: event {event}: CRC32C mismatch", out)
        self.assertIn(f"{victim}: CRC32C checksum is", out)
        self.assertRegex(out, r"\d+ events in \d+ files, 1 with problems")

    def test_a_file_without_its_sidecar_is_incomplete_and_not_counted(self):
        written = self.run_and_write()
        os.remove(os.path.join(self.data, "run000012_bu1_0000.json"))
        part = os.path.join(self.data, "run000012_bu1_0001.dqf")
        shutil.move(part, part + ".part")
        os.remove(os.path.join(self.data, "run000012_bu1_0001.json"))
        code, out = self.daqflow(["dump", self.data])
        self.assertEqual(code, 0, out)
        for name in ("run000012_bu1_0000.dqf", "run000012_bu1_0001.dqf.part"):
            self.assertIn(f"{name}: incomplete (being written, or its writer died), 150 events; "
                          "not counted", out)
        self.assertIn(f"{written - 300} events in", out)
        self.assertIn("all verified (2 incomplete not counted)", out)

    def test_dump_of_a_missing_path_fails(self):
        code, out = self.daqflow(["dump", self.path("nothing-here")])
        self.assertNotEqual(code, 0, out)
        self.assertIn("nothing-here: no such file or directory", out)


if __name__ == "__main__":
    unittest.main()
