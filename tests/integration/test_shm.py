"""The shm transport between real processes: `daqflow run` of the 1-to-1 stream over shm checks
every byte and leaves no segment behind; a context killed with SIGKILL leaves its segments, which
`daqflow shm list` shows with a dead owner and `daqflow shm clean` removes."""

import os
import signal

from daqflow_testlib import (DaqflowTestCase, control_ports, http, read_example, rewrite_ports,
                             set_default_transport, set_param, wait_until)


def run_tag(text, number=1):
    """The segments' tag of a run of this configuration: its number (a test's first run takes
    number 1 from the test's own registry) and its first control port."""
    return f"{number}.{control_ports(text)[0]}"


def segments(tag):
    prefix = f"daqflow.{tag}."
    return sorted(n for n in os.listdir("/dev/shm") if n.startswith(prefix))


class ShmTransport(DaqflowTestCase):
    def config(self, name):
        text = set_default_transport(rewrite_ports(read_example("stream-1to1.yaml")), "shm")
        text = text.replace("[sink0], message_size: 1048576}",
                            "[sink0], message_size: 1048576, verify: full}")
        text = text.replace("{type: sink, id: sink0}", "{type: sink, id: sink0, verify: full}")
        return self.write_config(name, text), text

    def test_stream_over_shm_checks_every_byte_and_cleans_up(self):
        config, text = self.config("stream-shm.yaml")
        code, out, summary = self.run_config(config, "--duration", "3", timeout=90)
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        sink = summary["applications"]["sink0"]
        self.assertGreater(sink["metrics"]["messages_in"], 0)
        self.assertEqual(sink["results"]["errors_sequence"], 0)
        self.assertEqual(sink["results"]["errors_pattern"], 0)
        self.assertEqual(segments(run_tag(text)), [], "a clean run removes its segments")

    def test_killed_context_leaves_segments_that_shm_clean_removes(self):
        config, text = self.config("stream-shm-kill.yaml")
        tag = run_tag(text)
        ports = control_ports(text)
        run = self.start(["run", config, "--duration", "0", "--status-interval", "0.2",
                          "--summary", self.path("summary.json"), "--log-dir", self.path("logs")],
                         "run.log")

        def contexts():
            self.assertIsNone(run.poll(), self.output_of("run.log"))
            answers = []
            for port in ports:
                try:
                    status, body = http(port, "GET", "/api/v1/context", timeout=1.0)
                except OSError:
                    return None
                if status != 200 or body["state"] != "Enabled":
                    return None
                answers.append(body)
            return answers
        found = wait_until(contexts, 30, "every context Enabled")
        victim = next(c for c in found if any(a["type"] == "sink" for a in c["applications"]))
        self.assertTrue(segments(tag), "the running contexts have segments")
        os.kill(victim["pid"], signal.SIGKILL)
        self.assertNotEqual(run.wait(60), 0, self.output_of("run.log"))

        left = segments(tag)
        self.assertTrue(any(".sink0." in n for n in left), f"the killed sink's segments: {left}")
        code, out = self.daqflow(["shm", "list", "--run", tag])
        self.assertEqual(code, 0, out)
        sink_rows = [line for line in out.splitlines() if ".sink0." in line]
        self.assertTrue(sink_rows, out)
        for row in sink_rows:
            self.assertIn(f" {victim['pid']} ", row)
            self.assertIn(" dead ", row)

        code, out = self.daqflow(["shm", "clean", "--all-dead", "--run", tag])
        self.assertEqual(code, 0, out)
        self.assertEqual(segments(tag), [], out)
