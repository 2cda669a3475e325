"""Pre-flight checks: what `daqflow run` verifies on every host before it starts anything, and
`daqflow check --preflight` alone (docs/operations.md). Each problem is reported before any
executive starts, naming the context and its host, and no run number is taken. A small /dev/shm
and a full disk are small tmpfs mounts in a mount namespace of the test's own (unshare -m), gone
with it."""

import json
import os
import re
import socket
import subprocess
import unittest

from daqflow_testlib import PORTS, DaqflowTestCase, control_ports, read_example, rewrite_ports


class Preflight(DaqflowTestCase):
    def run_in_namespace(self, mounts, args, timeout=120):
        """`daqflow ARGS` in a mount namespace of its own, with each (size, where) of mounts a
        fresh tmpfs there; returns (exit code, output)."""
        script = "".join(f"mount -t tmpfs -o size={size} tmpfs {where} && "
                         for size, where in mounts)
        done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                               script + 'exec "$@"', "sh", self.binary] + args,
                              cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout)
        return done.returncode, done.stdout.decode("utf-8", "replace")

    def assert_nothing_started(self, out):
        self.assertIn("nothing was started", out)
        self.assertNotIn("starting", out)
        self.assertFalse(os.path.exists(self.path("logs")), out)
        code, runs = self.daqflow(["runs", "list", "--json"])
        self.assertEqual(code, 0, runs)
        self.assertEqual(json.loads(runs), [], "no run number is taken")

    def test_a_control_port_taken_is_named_with_its_process(self):
        text = rewrite_ports(read_example("local-inproc.yaml"))
        config = self.write_config("evb.yaml", text)
        port = control_ports(text)[0]
        with socket.socket() as squatter:
            squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            squatter.bind(("127.0.0.1", port))
            squatter.listen()
            code, out, _ = self.run_config(config, "--duration", "1")
            self.assertNotEqual(code, 0, out)
            self.assertIn(f"pre-flight: context builder on 127.0.0.1: control port {port} is "
                          f"taken by pid {os.getpid()}", out)
            self.assertIn("give the context another control_port", out)
            self.assert_nothing_started(out)
            code, out = self.daqflow(["check", "--preflight", config])
            self.assertEqual(code, 1, out)
            self.assertIn(f"control port {port} is taken", out)
        # Free again: the run starts.
        code, out = self.daqflow(["check", "--preflight", config])
        self.assertEqual(code, 0, out)
        self.assertIn("pre-flight checks ok", out)

    def test_a_dev_shm_too_small_for_the_shm_pools_is_reported(self):
        text = rewrite_ports(read_example("local.yaml")).replace("default: tcp", "default: shm")
        self.assertIn("default: shm", text)
        config = self.write_config("shm.yaml", text)
        code, out = self.run_in_namespace([("16m", "/dev/shm")],
                                          ["run", config, "--duration", "1", "--log-dir",
                                           self.path("logs")])
        self.assertNotEqual(code, 0, out)
        # Each RU and the EVM: its chunks (32 of 4 MiB) and its endpoint.
        self.assertRegex(out, r"pre-flight: contexts evm, ru1, ru2, ru3, bu1, bu2 on 127\.0\.0\.1: "
                              r"the shm transport needs \d+ MiB in /dev/shm \(evm0 129 MiB, "
                              r"ru1 129 MiB, ru2 129 MiB, ru3 129 MiB, bu1 \d+ MiB, bu2 \d+ MiB\), "
                              r"1[56] MiB are free")
        self.assertIn("enlarge /dev/shm", out)
        self.assert_nothing_started(out)

    def test_an_output_disk_without_room_for_its_cap_is_reported(self):
        disk = self.path("disk")
        os.makedirs(disk)
        text = rewrite_ports(read_example("local-inproc.yaml")).replace(
            "output: {kind: discard}", "output: {kind: file, dir: disk, max_total_mb: 64}")
        config = self.write_config("evb.yaml", text)
        code, out = self.run_in_namespace([("8m", disk)], ["run", config, "--duration", "1",
                                                           "--log-dir", self.path("logs")])
        self.assertNotEqual(code, 0, out)
        self.assertRegex(out, r"pre-flight: context builder on 127\.0\.0\.1: the outputs of bu1, "
                              rf"bu2 may write 128 MiB under {re.escape(disk)}, [78] MiB are free")
        self.assert_nothing_started(out)
        # With room (no tmpfs: this machine's disk), the same configuration passes.
        code, out = self.daqflow(["check", "--preflight", config])
        self.assertEqual(code, 0, out)

    def test_a_host_that_does_not_answer_through_its_launcher_is_named(self):
        closed = PORTS.take(strict=True)  # nothing listens there: ssh is refused
        text = rewrite_ports(read_example("local-inproc.yaml")).replace(
            "contexts:", "hosts:\n  - {address: 127.0.0.1, launcher: ssh, ssh: {port: "
                         f"{closed}, options: [-o, ConnectTimeout=5]}}}}\ncontexts:", 1)
        config = self.write_config("evb.yaml", text)
        code, out, _ = self.run_config(config, "--duration", "1")
        self.assertNotEqual(code, 0, out)
        self.assertIn("pre-flight: host 127.0.0.1: does not answer through ssh", out)
        self.assertIn(f"port {closed}: Connection refused", out)
        self.assertIn("ssh 127.0.0.1 true", out)
        self.assert_nothing_started(out)


if __name__ == "__main__":
    unittest.main()
