"""`daqflow run` over the mpi transport: one mpirun starts a rank per context (MPMD), data flows
and is checked byte for byte, every completion strategy works, and a rank that dies ends the run
with a clear error instead of a hang."""

import os
import re
import shutil
import signal
import subprocess
import threading
import time
import unittest

from daqflow_testlib import (DaqflowTestCase, daqflow_binary, read_example, rewrite_ports,
                             set_default_transport)


def mpi_built():
    try:
        out = subprocess.run([daqflow_binary(), "transports"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=30).stdout.decode()
    except (OSError, subprocess.TimeoutExpired):
        return False
    built = re.search(r"^built:(.*)$", out, re.M)
    return built is not None and "mpi" in built.group(1).split()


class MpiRun(DaqflowTestCase):
    def setUp(self):
        super().setUp()
        # Missing pieces fail the test: scripts/bootstrap installs them, and a transport left out
        # of the build must not pass for working.
        self.assertIsNotNone(shutil.which("mpirun"), "mpirun is missing (openmpi-bin)")
        self.assertTrue(mpi_built(), "this daqflow was built without the mpi transport")

    def stream_config(self, example, completion=None):
        text = set_default_transport(rewrite_ports(read_example(example)), "mpi")
        if completion:
            text = text.replace("default: mpi", f"default: mpi, mpi_completion: {completion}")
        return self.write_config(f"mpi-{completion or 'default'}-{example}", text)

    def check_clean_stream(self, code, out, summary, sources, sinks):
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        apps = summary["applications"]
        self.assertEqual(sorted(a["type"] for a in apps.values()),
                         sorted(["source"] * sources + ["sink"] * sinks))
        for app_id, app in apps.items():
            self.assertEqual(app["state"], "Halted", f"{app_id}: {app}")
            for name, value in app["metrics"].items():
                if "error" in name:
                    self.assertEqual(value, 0, f"{app_id} metric {name}")
            if app["type"] == "sink":
                self.assertGreater(app["metrics"].get("messages_in", 0), 0, app_id)
                self.assertEqual(app["results"].get("errors_sequence"), 0, app_id)
                self.assertEqual(app["results"].get("errors_pattern"), 0, app_id)
        self.assertIn("mpirun", out, "daqflow run says that it starts the ranks with mpirun")

    def test_stream_one_to_one(self):
        code, out, summary = self.run_config(self.stream_config("stream-1to1.yaml"),
                                             "--duration", "3", timeout=120)
        self.check_clean_stream(code, out, summary, 1, 1)
        self.assertGreater(summary["results"].get("throughput_mb_s", 0), 0)

    def test_stream_three_to_one(self):
        code, out, summary = self.run_config(self.stream_config("stream-3to1.yaml"),
                                             "--duration", "3", timeout=120)
        self.check_clean_stream(code, out, summary, 3, 1)

    def test_every_completion_strategy(self):
        for completion in ("test", "testall", "testsome"):
            with self.subTest(completion=completion):
                code, out, summary = self.run_config(
                    self.stream_config("stream-1to1.yaml", completion), "--duration", "2",
                    timeout=120)
                self.check_clean_stream(code, out, summary, 1, 1)

    def test_a_dead_rank_ends_the_run_with_a_clear_error(self):
        config = self.stream_config("stream-1to1.yaml")
        killed = []
        folders = {}  # this run's folder of Open MPI segments: what it held before the kill

        def segment_folder():
            found = subprocess.run(["pgrep", "-f", "btl_vader_backing_directory"],
                                   stdout=subprocess.PIPE).stdout.split()
            for pid in found:
                try:
                    with open(f"/proc/{int(pid)}/cmdline", "rb") as f:
                        argv = f.read().decode().split("\0")
                except OSError:
                    continue
                if config in argv and "btl_vader_backing_directory" in argv:
                    folder = argv[argv.index("btl_vader_backing_directory") + 1]
                    folders[folder] = os.listdir(folder)

        def kill_sink_rank():
            # The sink's rank: `daqflow exec CONFIG --context sink`, started by mpirun.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not killed:
                time.sleep(0.5)
                found = subprocess.run(["pgrep", "-f", f"exec {config} --context sink"],
                                       stdout=subprocess.PIPE).stdout.split()
                if found and os.path.exists(self.path("logs")):
                    time.sleep(3)  # let data flow first
                    segment_folder()
                    for pid in found:
                        os.kill(int(pid), signal.SIGKILL)
                    killed.extend(found)

        killer = threading.Thread(target=kill_sink_rank)
        killer.start()
        # No end of its own: the run ends when it sees the rank die.
        code, out, summary = self.run_config(config, "--duration", "0", timeout=120)
        killer.join()
        self.assertTrue(killed, "the sink's rank was found and killed")
        self.assertNotEqual(code, 0, out)
        self.assertEqual(summary["status"], "failed", summary)
        self.assertIn("mpirun", summary["failure"])
        # The ranks kept their shared-memory segments in the run's folder, which went with the
        # run: the killed rank's too.
        self.assertEqual(len(folders), 1, folders)
        for folder, held in folders.items():
            self.assertTrue(folder.startswith("/dev/shm/daqflow-mpi-"), folder)
            self.assertTrue(any(name.startswith("vader_segment") for name in held), held)
            self.assertFalse(os.path.exists(folder), folder)


if __name__ == "__main__":
    unittest.main()
