"""The control API (docs/control-api.md) of an executive started with `daqflow exec`: reading the
context and its applications, walking the state machine, changing parameters, bad requests."""

import unittest

from daqflow_testlib import DaqflowTestCase, http, wait_until

EXAMPLE = "stream-1to1.yaml"


class ControlApi(DaqflowTestCase):
    def setUp(self):
        super().setUp()
        # inproc: both contexts in this one executive, so that Configure needs no other process.
        self.proc, self.contexts = self.start_exec(EXAMPLE, "inproc")
        self.apps = {}  # id -> (port, type)
        for ctx in self.contexts.values():
            for app_id, app_type in ctx["apps"].items():
                self.apps[app_id] = (ctx["port"], app_type)
        self.sink = next(i for i, (_, t) in self.apps.items() if t == "sink")
        self.source = next(i for i, (_, t) in self.apps.items() if t == "source")

    def port_of(self, app_id):
        return self.apps[app_id][0]

    def command(self, app_id, command, expect=202):
        status, body = http(self.port_of(app_id), "POST", f"/api/v1/apps/{app_id}/fsm/{command}")
        self.assertEqual(status, expect, body)
        return body

    def test_reads_context_applications_and_cluster(self):
        for name, ctx in self.contexts.items():
            status, body = http(ctx["port"], "GET", "/api/v1/context")
            self.assertEqual(status, 200)
            self.assertEqual(body["name"], name)
            self.assertEqual(body["control_port"], ctx["port"])
            self.assertEqual(body["pid"], self.proc.pid)
            self.assertEqual(body["state"], "Halted")
            for app in body["applications"]:
                self.assertTrue({"id", "type", "state", "reason"} <= set(app), app)
                self.assertEqual(app["state"], "Halted")

            status, apps = http(ctx["port"], "GET", "/api/v1/apps")
            self.assertEqual(status, 200)
            self.assertEqual({a["id"] for a in apps}, set(ctx["apps"]))
            for a in apps:
                self.assertTrue({"id", "type", "index", "state", "reason"} <= set(a), a)

        status, app = http(self.port_of(self.sink), "GET", f"/api/v1/apps/{self.sink}")
        self.assertEqual(status, 200)
        for key in ("id", "type", "index", "context", "state", "reason", "finished", "params",
                    "metrics", "results"):
            self.assertIn(key, app)
        self.assertEqual(app["type"], "sink")
        self.assertFalse(app["finished"])
        self.assertIn("sample_interval_ms", app["params"])

        status, table = http(self.port_of(self.sink), "GET", "/api/v1/cluster")
        self.assertEqual(status, 200)
        self.assertEqual(sorted(e["id"] for e in table), sorted(self.apps))
        self.assertEqual([e["index"] for e in table], list(range(len(table))))

    def test_walks_the_state_machine_and_guards_parameters(self):
        for ctx in self.contexts.values():
            status, body = http(ctx["port"], "POST", "/api/v1/fsm/Configure")
            self.assertEqual(status, 202, body)
            self.assertEqual(body["command"], "Configure")
            for a in body["applications"]:
                self.assertIn(a["state"], ("Configuring", "Ready"), a)
        for app_id in self.apps:
            self.wait_app_state(self.port_of(app_id), app_id, "Ready")

        # Parameters change while Ready...
        status, body = http(self.port_of(self.sink), "PUT", f"/api/v1/apps/{self.sink}/params",
                            {"sample_interval_ms": 300})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["params"]["sample_interval_ms"], 300)

        # Consumers first, then producers.
        answer = self.command(self.sink, "Enable")
        self.assertEqual(answer["id"], self.sink)
        self.assertIn(answer["state"], ("Enabling", "Enabled"))
        self.wait_app_state(self.port_of(self.sink), self.sink, "Enabled")
        self.command(self.source, "Enable")
        self.wait_app_state(self.port_of(self.source), self.source, "Enabled")

        # ...but not while Enabled.
        status, body = http(self.port_of(self.sink), "PUT", f"/api/v1/apps/{self.sink}/params",
                            {"sample_interval_ms": 400})
        self.assertEqual(status, 409, body)
        self.assertIsInstance(body.get("error"), str)

        self.command(self.source, "Suspend")
        self.wait_app_state(self.port_of(self.source), self.source, "Suspended")
        self.command(self.source, "Resume")
        self.wait_app_state(self.port_of(self.source), self.source, "Enabled")

        # Data flowed into the sink.
        wait_until(lambda: http(self.port_of(self.sink), "GET", f"/api/v1/apps/{self.sink}")[1]
                   ["metrics"].get("messages_in", 0) > 0, 10, "messages at the sink")

        # A command the state does not allow: 409, nothing changes.
        body = self.command(self.source, "Configure", expect=409)
        self.assertIsInstance(body.get("error"), str)
        self.assertEqual(http(self.port_of(self.source), "GET",
                              f"/api/v1/apps/{self.source}")[1]["state"], "Enabled")

        self.command(self.source, "Halt")
        self.wait_app_state(self.port_of(self.source), self.source, "Halted")
        self.command(self.sink, "Halt")
        self.wait_app_state(self.port_of(self.sink), self.sink, "Halted")
        status, body = http(self.port_of(self.sink), "PUT", f"/api/v1/apps/{self.sink}/params",
                            {"sample_interval_ms": 500})
        self.assertEqual(status, 200, body)

    def test_bad_requests_get_json_errors(self):
        port = self.port_of(self.sink)
        path = f"/api/v1/apps/{self.sink}/params"
        cases = [
            ("PUT", path, "{not json", 400),
            ("PUT", path, '{"no_such_param": 1}', 400),
            ("PUT", path, '{"sample_interval_ms": "fast"}', 400),
            ("PUT", path, "[1, 2]", 400),
            ("GET", "/api/v1/apps/no_such_app", None, 404),
            ("POST", "/api/v1/apps/no_such_app/fsm/Enable", None, 404),
            ("GET", "/api/v1/nothing/here", None, 404),
        ]
        for method, p, raw, expected in cases:
            with self.subTest(method=method, path=p, body=raw):
                status, body = http(port, method, p, raw=raw)
                self.assertEqual(status, expected, body)
                self.assertIsInstance(body, dict, body)
                self.assertIsInstance(body.get("error"), str, body)
        # An unknown command and a wrong method are refused with a 4xx and a JSON error.
        for method, p in (("POST", f"/api/v1/apps/{self.sink}/fsm/Explode"),
                          ("DELETE", f"/api/v1/apps/{self.sink}")):
            with self.subTest(method=method, path=p):
                status, body = http(port, method, p)
                self.assertTrue(400 <= status < 500, (status, body))
                self.assertIsInstance(body.get("error"), str, body)
        # The executive is still there and unchanged.
        self.assertEqual(http(port, "GET", f"/api/v1/apps/{self.sink}")[1]["state"], "Halted")
        self.assertIsNone(self.proc.poll())

    def test_shutdown_ends_the_process(self):
        port = next(iter(self.contexts.values()))["port"]
        status, _ = http(port, "POST", "/api/v1/shutdown")
        self.assertEqual(status, 202)
        self.assertEqual(self.proc.wait(10), 0)


if __name__ == "__main__":
    unittest.main()
