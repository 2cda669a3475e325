"""`daqflow ctl` and `daqflow status` against an executive started with `daqflow exec`."""

import json
import unittest

from daqflow_testlib import PORTS, DaqflowTestCase

EXAMPLE = "stream-1to1.yaml"


class CtlAndStatus(DaqflowTestCase):
    def setUp(self):
        super().setUp()
        self.proc, self.contexts = self.start_exec(EXAMPLE, "inproc")

    def address(self, ctx):
        return f"127.0.0.1:{self.contexts[ctx]['port']}"

    def ctl(self, *args):
        code, out = self.daqflow(["ctl"] + list(args), timeout=60)
        return code, out

    def test_status_shows_applications_and_states(self):
        for name, ctx in self.contexts.items():
            code, out = self.daqflow(["status", self.address(name)])
            self.assertEqual(code, 0, out)
            self.assertIn(f"context {name} at 127.0.0.1:{ctx['port']}", out)
            for app_id, app_type in ctx["apps"].items():
                self.assertRegex(out, rf"\n{app_id} +{app_type} +Halted")

            code, out = self.daqflow(["status", self.address(name), "--json"])
            self.assertEqual(code, 0, out)
            data = json.loads(out)
            self.assertEqual(data["context"]["name"], name)
            self.assertEqual({a["id"] for a in data["applications"]}, set(ctx["apps"]))
            for app in data["applications"]:
                self.assertIn("metrics", app)

    def test_ctl_drives_contexts_and_applications(self):
        for name in self.contexts:
            code, out = self.ctl(self.address(name), "Configure", "--wait")
            self.assertEqual(code, 0, out)
            answer = json.loads(out)
            self.assertEqual(answer["command"], "Configure")
            self.assertTrue(all(a["state"] == "Ready" for a in answer["applications"]), answer)

        sinks = [(n, a) for n, c in self.contexts.items() for a, t in c["apps"].items()
                 if t == "sink"]
        sources = [(n, a) for n, c in self.contexts.items() for a, t in c["apps"].items()
                   if t == "source"]
        for name, app in sinks + sources:
            code, out = self.ctl(self.address(name), "Enable", "--app", app, "--wait")
            self.assertEqual(code, 0, out)
            self.assertEqual(json.loads(out)["state"], "Enabled")

        # Not allowed while Enabled: the executive's 409 and its error text, non-zero exit.
        name, app = sinks[0]
        code, out = self.ctl(self.address(name), "Configure", "--app", app)
        self.assertNotEqual(code, 0, out)
        self.assertIn("409", out)
        self.assertIn(f"/api/v1/apps/{app}/fsm/Configure", out)

        # Without --wait: the answer carries the transitional state.
        code, out = self.ctl(self.address(sources[0][0]), "Halt", "--app", sources[0][1])
        self.assertEqual(code, 0, out)
        self.assertIn(json.loads(out)["state"], ("Halting", "Halted"))
        for name in self.contexts:
            code, out = self.ctl(self.address(name), "Halt", "--wait")
            if code != 0:
                # A context whose applications are all Halted already answers 409.
                self.assertIn("409", out)
        for name in self.contexts:
            code, out = self.daqflow(["status", self.address(name), "--json"])
            self.assertEqual(code, 0, out)
            states = {a["state"] for a in json.loads(out)["applications"]}
            self.assertEqual(states, {"Halted"}, name)

    def test_ctl_rejects_bad_input(self):
        name = next(iter(self.contexts))
        code, out = self.ctl(self.address(name), "Explode")
        self.assertNotEqual(code, 0)
        self.assertIn("unknown command 'Explode'", out)

        code, out = self.ctl("no-port-here", "Enable")
        self.assertNotEqual(code, 0)
        self.assertIn("HOST:PORT", out)

        closed = PORTS.take()
        code, out = self.ctl(f"127.0.0.1:{closed}", "Configure")
        self.assertNotEqual(code, 0)
        self.assertIn(f"127.0.0.1:{closed}", out)

        code, out = self.daqflow(["status", f"127.0.0.1:{closed}"])
        self.assertNotEqual(code, 0)
        self.assertIn(f"127.0.0.1:{closed}", out)


if __name__ == "__main__":
    unittest.main()
