"""A control port that no client can stall (docs/control-api.md, Limits): the EVM's control port of
a running event builder (examples/local.yaml) attacked from 127.0.0.1, the address of the honest
clients too, while the controller runs the builder and status requests go on beside the attack."""

import json
import re
import socket
import statistics
import time
import unittest

from daqflow_testlib import (DaqflowTestCase, control_ports, http, read_example, rewrite_ports,
                             set_param, wait_until)

TRICKLING = 500     # each sends one header byte a second for 10 s
IDLE = 500          # each asks once, then keeps its connection idle
HUGE = 100          # each announces a body of 10^12 bytes and sends none
HALF_SENT = 100     # each sends part of a request line, then nothing
ATTACK_S = 10


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def send_quietly(s, data):
    """Sends what the server still takes; False once it has closed the connection."""
    try:
        s.sendall(data)
        return True
    except OSError:
        return False


def read_answer(s, limit_s):
    """What the server sends until it closes or limit_s passes."""
    s.settimeout(limit_s)
    got = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    return got


class ControlPortUnderAttack(DaqflowTestCase):
    def test_a_builder_runs_on_while_its_evms_control_port_is_attacked(self):
        text = rewrite_ports(read_example("local.yaml"))
        text = set_param(set_param(text, "mean", 256), "sd", 128)
        text = set_param(text, "dir", self.path("run-data"))
        text = text.replace("bus: [bu1, bu2]", "bus: [bu1, bu2]\n        trigger_rate_hz: 2000", 1)
        config = self.write_config("local.yaml", text)
        evm = dict(zip(re.findall(r"- name: (\w+)", text), control_ports(text)))["evm"]
        proc = self.start(["run", config, "--duration", "0", "--summary", self.path("summary.json"),
                           "--log-dir", self.path("logs")], "run.log")
        wait_until(lambda: "running until" in self.output_of("run.log") or
                   "Enabled: monitoring" in self.output_of("run.log") or proc.poll() is not None,
                   120, "the run to be enabled")
        self.assertIsNone(proc.poll(), self.output_of("run.log"))

        sockets = []
        try:
            # Idle keep-alives: one whole request each, then silence.
            idle = []
            for _ in range(IDLE):
                s = connect(evm)
                s.sendall(b"GET /api/v1/context HTTP/1.1\r\nHost: x\r\n\r\n")
                idle.append(s)
            sockets += idle
            trickling = [connect(evm) for _ in range(TRICKLING)]
            sockets += trickling
            for s in trickling:
                s.sendall(b"GET /api/v1/context HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            half = [connect(evm) for _ in range(HALF_SENT)]
            sockets += half
            for s in half:
                s.sendall(b"GET /api/v1/con")
            # A body announced that will never come: the answer must not wait for it.
            huge = []
            for _ in range(HUGE):
                s = connect(evm)
                s.sendall(b"PUT /api/v1/apps/evm0/params HTTP/1.1\r\nHost: x\r\n"
                          b"Content-Type: application/json\r\nContent-Length: 1000000000000\r\n\r\n")
                huge.append((s, time.monotonic()))
            sockets += [s for s, _ in huge]

            latencies, answers = [], []
            began = time.monotonic()
            next_byte = began + 1.0
            while time.monotonic() - began < ATTACK_S:
                if time.monotonic() >= next_byte:
                    next_byte += 1.0
                    for s in trickling:
                        send_quietly(s, b"a")
                t0 = time.monotonic()
                status, _ = http(evm, "GET", "/api/v1/context", timeout=30)
                latencies.append(time.monotonic() - t0)
                answers.append(status)
                t0 = time.monotonic()
                code, out = self.daqflow(["status", f"127.0.0.1:{evm}"], timeout=60)
                latencies.append(time.monotonic() - t0)
                answers.append(200 if code == 0 else out)
                time.sleep(0.1)

            too_large = []
            for s, _ in huge:
                got = read_answer(s, 10)
                too_large.append(got.split(b"\r\n", 1)[0])
            # Every trickling connection was cut at its request deadline, answered 408.
            cut = sum(1 for s in trickling
                      if read_answer(s, 10).startswith(b"HTTP/1.1 408"))
        finally:
            for s in sockets:
                s.close()

        print(f"\n{len(latencies)} status requests during the attack: median "
              f"{statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms; "
              f"{cut} of {TRICKLING} trickling connections answered 408", flush=True)
        self.assertEqual(set(answers), {200}, answers)
        self.assertLess(max(latencies), 5.0, "a status request waited behind the attack")
        self.assertEqual(set(too_large), {b"HTTP/1.1 413 Payload Too Large"}, too_large[:3])
        self.assertEqual(cut, TRICKLING)
        status, ctx = http(evm, "GET", "/api/v1/context")
        self.assertEqual(status, 200)
        figures = ctx["control_port_stats"]
        self.assertGreaterEqual(figures["timed_out"], TRICKLING + HALF_SENT, figures)
        self.assertEqual(figures["too_large"], HUGE, figures)

        self.assertEqual(self.stop_run(proc, timeout=180), 0, self.output_of("run.log"))
        # From the attack on (the run enabled): no context looked slow or silent. Before it, a
        # machine busy with other work may make a context slow to configure, and the controller
        # says so, rightly.
        out = self.output_of("run.log")
        during = out.split("running until", 1)[-1]
        self.assertNotIn("is slow", during)
        self.assertNotIn("does not answer", during)
        self.assertNotIn("does not answer", out)
        with open(self.path("summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        r = summary["results"]
        self.assertGreater(r["events_built"], 0, r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_lost"], 0, r)


if __name__ == "__main__":
    unittest.main()
