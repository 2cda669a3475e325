"""`daqflow run` of the stream examples (1 to 1, 3 to 1, 1 to 3) over TCP and over inproc: data
flows, every sink receives, nothing is counted as an error."""

import os
import pty
import re
import select
import subprocess
import time
import unittest

from daqflow_testlib import DaqflowTestCase, read_example, rewrite_ports, set_default_transport

EXAMPLES = ("stream-1to1.yaml", "stream-3to1.yaml", "stream-1to3.yaml")
TRANSPORTS = ("tcp", "inproc")


class StreamRun(DaqflowTestCase):
    def check_stream(self, example, transport):
        text = set_default_transport(rewrite_ports(read_example(example)), transport)
        config = self.write_config(f"{transport}-{example}", text)

        code, out, summary = self.run_config(config, "--duration", "3", "--status-interval",
                                             "0.5", timeout=90)

        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        self.assertGreater(summary["results"].get("throughput_mb_s", 0), 0, summary["results"])
        sinks = {i: a for i, a in summary["applications"].items() if a["type"] == "sink"}
        sources = {i: a for i, a in summary["applications"].items() if a["type"] == "source"}
        self.assertTrue(sinks and sources, summary["applications"])
        expected = {"1to1": (1, 1), "3to1": (3, 1), "1to3": (1, 3)}[example[7:11]]
        self.assertEqual((len(sources), len(sinks)), expected)
        for app_id, app in summary["applications"].items():
            self.assertEqual(app["state"], "Halted", f"{app_id}: {app}")
            for name, value in app["metrics"].items():
                if "error" in name:
                    self.assertEqual(value, 0, f"{app_id} metric {name}")
        for app_id, app in sinks.items():
            self.assertGreater(app["metrics"].get("messages_in", 0), 0, f"{app_id} received nothing")
            self.assertGreater(app["metrics"].get("bytes_in", 0), 0, app_id)
            self.assertEqual(app["results"].get("errors_sequence"), 0, app_id)
            self.assertEqual(app["results"].get("errors_pattern"), 0, app_id)
        for app_id, app in sources.items():
            self.assertGreater(app["metrics"].get("messages_out", 0), 0, f"{app_id} sent nothing")
        # Plain status lines (stdout is not a terminal here).
        self.assertRegex(out, r"enabled \d+/\d+ +[\d.]+ MB/s")

    def test_stream_examples(self):
        for transport in TRANSPORTS:
            for example in EXAMPLES:
                with self.subTest(example=example, transport=transport):
                    self.check_stream(example, transport)

    def test_status_line_is_rewritten_in_place_on_a_terminal(self):
        text = set_default_transport(rewrite_ports(read_example("stream-1to1.yaml")), "inproc")
        config = self.write_config("tty.yaml", text)
        master, slave = pty.openpty()
        proc = subprocess.Popen([self.binary, "run", config, "--duration", "2.5",
                                 "--status-interval", "0.5", "--summary", self.path("s.json"),
                                 "--log-dir", self.path("logs")],
                                cwd=self.dir, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self.addCleanup(os.close, master)
        out = b""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's last writer has gone
                break
            if not chunk:
                break
            out += chunk
        try:
            code = proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
        text = out.decode(errors="replace")
        self.assertEqual(code, 0, text)
        # Several status lines, each starting with \r and clearing the rest of the line, and no
        # newline between two of them.
        updates = re.findall(r"\r +[\d.]+ s  enabled \d+/\d+ [^\r\n]*\x1b\[K", text)
        self.assertGreaterEqual(len(updates), 2, repr(text))
        self.assertRegex(text, r"\x1b\[K\r +[\d.]+ s  enabled")


if __name__ == "__main__":
    unittest.main()
