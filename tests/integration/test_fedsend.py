"""A RU reading its FEDs over TCP (`input: {kind: network}`), fed by `daqflow fedsend`, in real processes.

A corrupted FED CRC fails the run with the FED id and the event number (on_error: fail) or marks
the event corrupted and goes on (on_error: mark), which `daqflow dump` then shows; fragments
replayed from a file (`fedsend --file`, made here with the CMS CRC-16 computed in Python) are
built and written intact.

FED ports come from 24000-24499 (this file's range); control and data ports from the test lib.
"""

import json
import os
import re
import unittest

from cms_formats import fed_fragment, free_ports
from daqflow_testlib import DaqflowTestCase, http, rewrite_ports, wait_until

FED_PORT_FIRST = 24000
FED_PORT_LAST = 24499


def free_fed_ports(count):
    """The first of `count` consecutive ports of this file's range, all free on 127.0.0.1."""
    return free_ports(FED_PORT_FIRST, FED_PORT_LAST, count)


CONFIG = """\
run: {{output: {output}}}
transports: {{default: tcp, max_message_size: 4194304}}
contexts:
  - name: evm
    host: 127.0.0.1
    control_port: 9500
    data_port: 9600
    applications:
      - {{type: evm, id: evm0, rus: [ru1], bus: [bu1], feds: 1, {evm_input}}}
  - name: ru1
    host: 127.0.0.1
    control_port: 9501
    data_port: 9601
    applications:
      - {{type: ru, id: ru1, evm: evm0, feds: 2, first_fed_id: 1203,
         input: {{kind: network, port: {ru_fed_port}, max_fragment_bytes: 16384,
                 on_error: {on_error}}}}}
  - name: bu1
    host: 127.0.0.1
    control_port: 9502
    data_port: 9602
    applications:
      - {{type: bu, id: bu1, evm: evm0, events_per_request: 16, output: {output_spec}}}
"""

CRC_ERROR = re.compile(r"FED 1203 event 57: CRC mismatch \(trailer 0x[0-9a-f]{4}, computed "
                       r"0x[0-9a-f]{4}\)")


class FedSend(DaqflowTestCase):
    def start_run(self, on_error, evm_input, output_spec="{kind: discard}"):
        """Starts the run with no end of its own: it fails by itself, or the test stops it once
        every event it sent has reached the builder (stop_when_triggered)."""
        self.fed_ports = free_fed_ports(4)
        evm = ("input: {kind: emulator}, trigger_rate_hz: 2000" if evm_input == "emulator" else
               f"first_fed_id: 1200, input: {{kind: network, port: {self.fed_ports + 2}, "
               "max_fragment_bytes: 16384}")
        text = rewrite_ports(CONFIG.format(output=self.path("data"), evm_input=evm,
                                           ru_fed_port=self.fed_ports, on_error=on_error,
                                           output_spec=output_spec))
        control = [int(p) for p in re.findall(r"control_port\s*:\s*(\d+)", text)]
        self.evm_control, self.ru_control = control[0], control[1]
        config = self.write_config("fedsend.yaml", text)
        self.summary = self.path("summary.json")
        run = self.start(["run", config, "--duration", "0", "--summary", self.summary,
                          "--log-dir", self.path("logs")], "run.log")

        # fedsend starts once the RU listens, so that it never has to retry its connections.
        def ru_listening():
            self.assertIsNone(run.poll(), self.output_of("run.log"))
            try:
                status, body = http(self.ru_control, "GET", "/api/v1/apps/ru1", timeout=1.0)
            except OSError:
                return False
            return status == 200 and body.get("state") in ("Ready", "Enabling", "Enabled")
        wait_until(ru_listening, 30, "ru1 configured")
        return run

    def stop_when_triggered(self, run, events):
        """Waits until the EVM has every one of `events` events, then stops the run (the halt
        builds and writes what is in flight, the last partial block included); returns its exit
        code."""
        def triggered():
            self.assertIsNone(run.poll(), self.output_of("run.log"))
            status, body = http(self.evm_control, "GET", "/api/v1/apps/evm0", timeout=2.0)
            return status == 200 and body["metrics"].get("events_triggered", 0) >= events
        wait_until(triggered, 60, f"{events} events at the EVM")
        return self.stop_run(run)

    def summary_data(self):
        with open(self.summary) as f:
            return json.load(f)

    def test_a_corrupted_crc_fails_the_run_naming_the_fed_and_the_event(self):
        run = self.start_run("fail", "emulator")
        code, out = self.daqflow(["fedsend", f"127.0.0.1:{self.fed_ports}", "--fed", "1203",
                                  "--feds", "2", "--events", "200", "--lognormal", "2048", "1024",
                                  "--max-size", "16384", "--corrupt-crc", "57"])
        self.assertIn("FED 1203 -> 127.0.0.1:", out)
        self.assertIn("CRC corrupted in event(s) 57", out)

        run_code = run.wait(90)
        run_out = self.output_of("run.log")
        self.assertNotEqual(run_code, 0, run_out)
        self.assertRegex(run_out, CRC_ERROR)
        data = self.summary_data()
        self.assertEqual(data["status"], "failed")
        self.assertRegex(data["failure"], CRC_ERROR)
        self.assertIn("ru1", data["failure"])

    def test_marked_events_are_built_written_and_shown_by_dump(self):
        run = self.start_run("mark", "network", "{kind: file, max_file_events: 64}")
        code_evm, out_evm = self.daqflow(["fedsend", f"127.0.0.1:{self.fed_ports + 2}", "--fed",
                                          "1200", "--events", "300", "--size", "512"])
        self.assertEqual(code_evm, 0, out_evm)
        code, out = self.daqflow(["fedsend", f"127.0.0.1:{self.fed_ports}", "--fed", "1203",
                                  "--feds", "2", "--events", "300", "--lognormal", "2048", "1024",
                                  "--max-size", "16384", "--corrupt-crc", "57"])
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"sent 600 fragments, \d+ bytes from 2 FED\(s\)")

        self.assertEqual(self.stop_when_triggered(run, 300), 0, self.output_of("run.log"))
        results = self.summary_data()["results"]
        self.assertEqual(results["events_triggered"], 300)
        self.assertEqual(results["events_written"], 300)
        logs = ""
        for name in os.listdir(self.path("logs")):
            with open(os.path.join(self.path("logs"), name), errors="replace") as f:
                logs += f.read()
        self.assertRegex(logs, CRC_ERROR)

        code, out = self.daqflow(["dump", self.path("data"), "--events", "--json"])
        self.assertEqual(code, 0, out)
        report = json.loads(out)
        self.assertTrue(report["all_verified"])
        self.assertEqual(report["events"], 300)
        events = {e["event"]: e for f in report["files"] for e in f["event_list"]}
        self.assertEqual(sorted(events), list(range(300)))
        self.assertEqual(events[57]["flags"], 2)  # kEventCorrupted
        self.assertIn("FED 1203", events[57]["problem"])
        self.assertEqual(events[56]["flags"], 0)
        self.assertEqual(events[56]["feds"], [1200, 1203, 1204])
        self.assertEqual(sum(f["corrupted_events"] for f in report["files"]), 1)

    def test_fragments_replayed_from_a_file_are_built_intact(self):
        events = 100
        raw = b"".join(fed_fragment(fed, e, 8 + (e * 5 + fed) % 50)
                       for e in range(events) for fed in (1203, 1204))
        with open(self.path("fragments.raw"), "wb") as f:
            f.write(raw)
        run = self.start_run("fail", "network", "{kind: file}")
        code_evm, out_evm = self.daqflow(["fedsend", f"127.0.0.1:{self.fed_ports + 2}", "--fed",
                                          "1200", "--events", str(events)])
        self.assertEqual(code_evm, 0, out_evm)
        code, out = self.daqflow(["fedsend", f"127.0.0.1:{self.fed_ports}", "--fed", "1203",
                                  "--feds", "2", "--file", self.path("fragments.raw")])
        self.assertEqual(code, 0, out)
        self.assertIn(f"sent {2 * events} fragments, {len(raw) + 2 * events * 16} bytes", out)

        self.assertEqual(self.stop_when_triggered(run, events), 0, self.output_of("run.log"))
        self.assertEqual(self.summary_data()["results"]["events_written"], events)
        code, out = self.daqflow(["dump", self.path("data")])
        self.assertEqual(code, 0, out)
        self.assertIn(f"{events} events in 1 file, all verified", out)


if __name__ == "__main__":
    unittest.main()
