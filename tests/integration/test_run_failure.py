"""`daqflow run` when things go wrong: a context killed mid-run, a context that cannot start.
The run names the context and why, halts and stops the rest, and exits non-zero."""

import json
import os
import re
import signal
import socket
import unittest

from daqflow_testlib import DaqflowTestCase, control_ports, http, pid_alive, read_example, \
    rewrite_ports, set_default_transport, wait_until


class RunFailures(DaqflowTestCase):
    def stream_config(self):
        text = set_default_transport(rewrite_ports(read_example("stream-1to1.yaml")), "tcp")
        return self.write_config("stream.yaml", text), control_ports(text)

    def test_a_context_killed_mid_run_fails_the_run_naming_it(self):
        config, ports = self.stream_config()
        self.assertGreaterEqual(len(ports), 2, "stream-1to1 has two contexts")
        summary = self.path("summary.json")
        run = self.start(["run", config, "--duration", "0", "--status-interval", "0.2",
                          "--summary", summary, "--log-dir", self.path("logs")], "run.log")

        def context(port):
            try:
                status, body = http(port, "GET", "/api/v1/context", timeout=1.0)
            except OSError:
                return None
            return body if status == 200 else None

        def all_enabled():
            self.assertIsNone(run.poll(), self.output_of("run.log"))
            answers = [context(p) for p in ports]
            return all(a and a["state"] == "Enabled" for a in answers) and answers
        contexts = wait_until(all_enabled, 30, "every context Enabled")

        victim = next(c for c in contexts if any(a["type"] == "sink" for a in c["applications"]))
        others = [c["pid"] for c in contexts if c["pid"] != victim["pid"]]
        os.kill(victim["pid"], signal.SIGKILL)

        code = run.wait(60)
        out = self.output_of("run.log")
        self.assertNotEqual(code, 0, out)
        expected = f"context {victim['name']} (pid {victim['pid']}) died: killed by signal 9"
        self.assertIn(expected, out)

        with open(summary) as f:
            data = json.load(f)
        self.assertEqual(data["status"], "failed")
        self.assertIn(expected, data["failure"])
        by_name = {c["name"]: c for c in data["contexts"]}
        self.assertEqual(by_name[victim["name"]]["exit_code"], 128 + signal.SIGKILL)
        for app in victim["applications"]:
            self.assertEqual(data["applications"][app["id"]]["state"], "Lost")
        # The other executives were stopped, not left behind.
        for pid in others:
            wait_until(lambda: not pid_alive(pid), 5, f"pid {pid} to end")

    def test_a_context_that_cannot_listen_fails_the_run_with_its_log(self):
        config, ports = self.stream_config()
        # Hold the first context's control port so that its executive cannot bind it.
        blocker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.addCleanup(blocker.close)
        # As the executive does; a listening socket still keeps it out (an earlier test's
        # connection in TIME_WAIT on this port would not).
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind(("127.0.0.1", ports[0]))
        blocker.listen(1)

        # The pre-flight checks would find the port taken before anything starts
        # (test_preflight); without them, the executive that cannot listen is what fails.
        code, out, data = self.run_config(config, "--duration", "30", "--no-preflight",
                                          timeout=60)

        self.assertNotEqual(code, 0, out)
        self.assertRegex(out, r"context [\w.-]+ \(pid \d+\) died: exited with code \d+ before its "
                              r"control port answered")
        self.assertIn(str(ports[0]), out)  # the log tail says which address was taken
        self.assertEqual(data["status"], "failed")
        self.assertTrue(re.search(r"died: exited with code", data["failure"]), data["failure"])


if __name__ == "__main__":
    unittest.main()
