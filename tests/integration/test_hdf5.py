"""The HDF5 output in real runs: examples/local.yaml writing HDF5 files that h5py alone reads
back (read_h5.py, in a virtual environment of Debian's python3 without daqflow's package), each event built once
and byte for byte as the .dqf writer writes it for the same seed (compared through `daqflow
convert`); a BU killed while writing HDF5 files, settled by the salvage; `daqflow convert`
round trips."""

import glob
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from daqflow_testlib import DaqflowTestCase, read_example, rewrite_ports

READER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "read_h5.py")

# Two BUs writing HDF5 files from emulated FEDs (as test_cms's FRD test, with files of 2000
# events).
TWO_BUS = """\
run: {{number: 21, output: {output}}}
transports: {{default: tcp, max_message_size: 4194304}}
contexts:
  - name: evm
    host: 127.0.0.1
    control_port: 9500
    data_port: 9600
    applications:
      - {{type: evm, id: evm0, rus: [ru1], bus: [bu1, bu2], feds: 2, first_fed_id: 1024,
         trigger_rate_hz: 20000, heartbeat_timeout_ms: 1000,
         fragment_size: {{dist: fixed, mean: 256}}, payload: pattern}}
  - name: ru1
    host: 127.0.0.1
    control_port: 9501
    data_port: 9601
    applications:
      - {{type: ru, id: ru1, evm: evm0, feds: 2, first_fed_id: 1203,
         fragment_size: {{dist: lognormal, mean: 512, sd: 256}}, payload: pattern}}
  - name: bu1
    host: 127.0.0.1
    control_port: 9502
    data_port: 9602
    applications:
      - {{type: bu, id: bu1, evm: evm0, events_per_request: 32, check_crc: true,
         output: {{kind: hdf5, max_file_events: 2000}}}}
  - name: bu2
    host: 127.0.0.1
    control_port: 9503
    data_port: 9603
    applications:
      - {{type: bu, id: bu2, evm: evm0, events_per_request: 32, check_crc: true,
         output: {{kind: hdf5, max_file_events: 2000}}}}
"""


class Hdf5(DaqflowTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # An analyst's environment: a virtual environment of Debian's python3 (its h5py and
        # numpy), in which daqflow's own package is not importable (read_h5.py checks).
        cls.venv = tempfile.mkdtemp(prefix="daqflow-h5-venv-")
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages",
                        "--without-pip", cls.venv], check=True, timeout=120)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.venv, ignore_errors=True)
        super().tearDownClass()

    def read_h5(self, paths):
        """Every file's attributes and events as h5py alone reads them (read_h5.py)."""
        done = subprocess.run([os.path.join(self.venv, "bin", "python"), READER] + sorted(paths),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr.decode(errors="replace"))
        return json.loads(done.stdout)

    def run_local(self, kind, data):
        text = rewrite_ports(read_example("local.yaml")).replace("kind: file", f"kind: {kind}")
        text = text.replace("./run-data", data)
        code, out, summary = self.run_config(self.write_config(f"local-{kind}.yaml", text),
                                             "--duration", "1", timeout=180, logs=f"logs-{kind}")
        self.assertEqual(code, 0, out[-3000:])
        return summary

    def test_a_local_run_writes_hdf5_that_h5py_alone_reads_as_the_dqf_writer_writes(self):
        h5_dir, dqf_dir = self.path("h5"), self.path("dqf")
        summary = self.run_local("hdf5", h5_dir)
        written = summary["results"]["events_written"]
        self.assertEqual(written, summary["results"]["events_built"])
        files = self.read_h5(glob.glob(os.path.join(h5_dir, "*.h5")))
        self.assertFalse(glob.glob(os.path.join(h5_dir, "*.part")))
        for f in files:
            self.assertEqual(f["attrs"]["format"], "daqflow events", f["path"])
            self.assertEqual(f["attrs"]["content"], "built_events")
            self.assertEqual(f["attrs"]["run"], 1)
            self.assertIn(f["attrs"]["writer"], ("bu1", "bu2"))
            self.assertEqual(f["attrs"]["events"], len(f["events"]))
            # The EVM's and three RUs' 8 FEDs each, found in the events.
            self.assertEqual(len(f["attrs"]["source_ids"]), 32, f["attrs"]["source_ids"])
        h5 = {}
        for f in files:
            for e in f["events"]:
                self.assertNotIn(e["event"], h5, "an event written twice")
                h5[e["event"]] = e
        # Every event built, once: 0 .. N-1 across both BUs.
        self.assertEqual(sorted(h5), list(range(written)))
        code, out = self.daqflow(["dump", h5_dir])
        self.assertEqual(code, 0, out)
        self.assertIn(f"{written} events in {len(files)} files, all verified", out)

        # The same seed into .dqf files: the events both runs built have the same bytes.
        self.run_local("file", dqf_dir)
        code, out = self.daqflow(["convert", dqf_dir, "--to", "hdf5", "--out",
                                  self.path("dqf-as-h5")], timeout=300)
        self.assertEqual(code, 0, out)
        dqf = {e["event"]: e for f in self.read_h5(glob.glob(self.path("dqf-as-h5/*.h5")))
               for e in f["events"]}
        common = sorted(set(h5) & set(dqf))
        self.assertGreater(len(common), 1000)
        for n in common:
            self.assertEqual((h5[n]["size"], h5[n]["crc32"]), (dqf[n]["size"], dqf[n]["crc32"]),
                             f"event {n}")

    def test_the_farm_and_time_slice_building_write_hdf5_that_h5py_alone_reads(self):
        for example, content, key in (("farm.yaml", "farm_decisions", "farm_events_written"),
                                      ("timeslice.yaml", "timeslices", "timeslices_written")):
            with self.subTest(example=example):
                data = self.path(f"data-{example}")
                text = rewrite_ports(read_example(example)).replace("kind: file", "kind: hdf5")
                text = text.replace("./run-data", data)
                code, out, summary = self.run_config(self.write_config(example, text),
                                                     "--duration", "2", timeout=180,
                                                     logs=f"logs-{example}")
                self.assertEqual(code, 0, out[-3000:])
                files = self.read_h5(glob.glob(os.path.join(data, "*.h5")))
                self.assertTrue(files, f"no HDF5 file in {data}")
                records = sum(len(f["events"]) for f in files)
                self.assertTrue(all(f["attrs"]["content"] == content for f in files))
                self.assertEqual(records, summary["results"][key], summary["results"])
                code, out = self.daqflow(["dump", data])
                self.assertEqual(code, 0, out)

    def test_convert_round_trips_keep_every_event_byte_for_byte(self):
        self.run_local("file", self.path("dqf"))
        for step, (source, to, out) in enumerate([("dqf", "hdf5", "h5"), ("h5", "dqf", "back")]):
            code, text = self.daqflow(["convert", self.path(source), "--to", to, "--out",
                                       self.path(out)], timeout=300)
            self.assertEqual(code, 0, text)
        originals = sorted(glob.glob(self.path("dqf/*.dqf")))
        self.assertTrue(originals)
        for path in originals:
            back = self.path(os.path.join("back", os.path.basename(path)))
            with open(path, "rb") as a, open(back, "rb") as b:
                self.assertTrue(a.read() == b.read(), f"{back} differs from {path}")
        code, out = self.daqflow(["dump", self.path("back")])
        self.assertEqual(code, 0, out)

    def test_a_bu_killed_while_writing_hdf5_files_leaves_every_event_on_disk_once(self):
        text = rewrite_ports(TWO_BUS.format(output=self.path("data")))
        r = self.lose_bu_mid_run(text, "two-bus.yaml", before=6000)
        self.assertEqual(r["lost_bus"], ["bu2"], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_in_doubt"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self.assertFalse(glob.glob(self.path("data/*.part")))
        files = self.read_h5(glob.glob(self.path("data/*.h5")))
        seen = [e["event"] for f in files for e in f["events"]]
        self.assertEqual(len(seen), len(set(seen)), "an event written twice")
        self.assertEqual(sorted(seen), list(range(r["events_built"])))
        self.assertEqual(len(seen), r["events_written"])
        code, out = self.daqflow(["dump", self.path("data")])
        self.assertEqual(code, 0, out)
        print("\n" + [line for line in self.output_of("run.log").splitlines()
                       if "bu2: salvaged" in line][0], flush=True)


if __name__ == "__main__":
    unittest.main()
