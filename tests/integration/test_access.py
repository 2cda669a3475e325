"""Access control of the control ports (docs/control-api.md, Access): the RUBU event builder of
examples/rubu.yaml with every control port opened (control_bind: 0.0.0.0) and a token file.
A command without the token is refused with 401, with it accepted (202); reads stay open;
`daqflow ctl` and `daqflow status` pass the token from --token-file or DAQFLOW_TOKEN; `daqflow
run` passes it to every executive it drives; an opened port without a token does not start."""

import http.client as httpclient
import os
import re
import unittest

from daqflow_testlib import DaqflowTestCase, http, read_example, rewrite_ports

TOKEN = "3f6c9e1a-daqflow-test-token"


class Access(DaqflowTestCase):
    def write_opened(self, with_token=True):
        text = rewrite_ports(read_example("rubu.yaml"))
        text = re.sub(r"^(\s+)control_port:(.*)$", r"\1control_port:\2\n\1control_bind: 0.0.0.0",
                      text, flags=re.M)
        if with_token:
            token = self.path("daqflow.token")
            with open(token, "w") as f:
                f.write(TOKEN + "\n")
            os.chmod(token, 0o600)
            # Relative to the configuration file's folder.
            text = "access: {token_file: daqflow.token}\n" + text
        names = re.findall(r"^\s*-\s*name\s*:\s*([\w.-]+)", text, re.M)
        ports = [int(p) for p in re.findall(r"control_port:\s*(\d+)", text)]
        return self.write_config("rubu.yaml", text), dict(zip(names, ports))

    def request(self, port, method, path, token=None):
        conn = httpclient.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            conn.request(method, path, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read().decode(errors="replace")
        finally:
            conn.close()

    def test_a_command_needs_the_token_once_the_port_is_opened(self):
        config, ports = self.write_opened()
        for name, port in ports.items():
            proc = self.start(["exec", config, "--context", name], f"{name}.log")
            self.wait_http(port, proc)
        port = ports["node1"]
        self.assertIn("0.0.0.0", self.output_of("node1.log"))

        status, body = self.request(port, "POST", "/api/v1/fsm/Configure")
        self.assertEqual(status, 401, body)
        self.assertIn("needs the control token", body)
        status, body = self.request(port, "POST", "/api/v1/fsm/Configure", token="not-it")
        self.assertEqual(status, 401, body)
        self.assertIn("wrong token", body)
        status, ctx = http(port, "GET", "/api/v1/context")
        self.assertEqual(status, 200, "reads stay open")
        self.assertEqual(ctx["unauthorized_requests"], 2)
        self.assertTrue(all(a["state"] == "Halted" for a in ctx["applications"]))
        self.assertIn("-> 401 (no token)", self.output_of("node1.log"))

        status, body = self.request(port, "POST", "/api/v1/fsm/Configure", token=TOKEN)
        self.assertEqual(status, 202, body)
        self.wait_app_state(port, "evm0", "Ready")

        # daqflow ctl: refused without the token, accepted with it (file or environment).
        code, out = self.daqflow(["ctl", f"127.0.0.1:{ports['node2']}", "Configure"])
        self.assertNotEqual(code, 0, out)
        self.assertIn("401", out)
        code, out = self.daqflow(["ctl", f"127.0.0.1:{ports['node2']}", "Configure", "--wait",
                                  "--token-file", self.path("daqflow.token")])
        self.assertEqual(code, 0, out)
        os.environ["DAQFLOW_TOKEN"] = TOKEN
        try:
            code, out = self.daqflow(["ctl", f"127.0.0.1:{ports['node3']}", "Configure", "--wait"])
            self.assertEqual(code, 0, out)
        finally:
            del os.environ["DAQFLOW_TOKEN"]
        code, out = self.daqflow(["status", f"127.0.0.1:{ports['node3']}", "--token-file",
                                  self.path("daqflow.token")])
        self.assertEqual(code, 0, out)
        self.assertIn("Ready", out)

        # Through another context's executive, the token goes along.
        status, body = self.request(port, "POST", "/api/v1/contexts/node2/fsm/Halt")
        self.assertEqual(status, 401, body)
        status, body = self.request(port, "POST", "/api/v1/contexts/node2/fsm/Halt",
                                    token=TOKEN)
        self.assertEqual(status, 202, body)

    def test_daqflow_run_passes_the_token(self):
        config, _ = self.write_opened()
        code, out, summary = self.run_config(config, "--duration", "2")
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", summary)
        self.assertGreater(summary["results"]["events_built"], 0, summary["results"])

    def test_an_opened_port_without_a_token_does_not_start(self):
        config, ports = self.write_opened(with_token=False)
        os.environ.pop("DAQFLOW_TOKEN", None)
        code, out = self.daqflow(["exec", config, "--context", "node1"])
        self.assertNotEqual(code, 0, out)
        self.assertIn("opens its control port on 0.0.0.0 (control_bind", out)


if __name__ == "__main__":
    unittest.main()
