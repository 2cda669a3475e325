"""`daqflow bench` end to end on tiny settings: every subcommand writes JSON, CSV and SVG in the
format of docs/benchmarks.md (parsed and checked here), with positive figures. No timing is
asserted: the figures are whatever this machine gives."""

import csv
import json
import os
import shutil
import socket
import subprocess
import unittest
import xml.etree.ElementTree as ET

from daqflow_testlib import PORTS, DaqflowTestCase

HOST_KEYS = {"hostname", "cores", "cpu_model", "kernel", "memory_gib"}
TOP_KEYS = ["bench", "stem", "transport", "date", "host", "command", "params", "columns", "rows",
            "summary"]


class Bench(DaqflowTestCase):
    def bench(self, args, contexts=6, timeout=240):
        """Runs `daqflow bench ARGS --out DIR --port-base P` with a port block of its own."""
        out = self.path("results")
        base = PORTS.take(3 * contexts)
        code, text = self.daqflow(["bench"] + args + ["--out", out, "--port-base", str(base)],
                                  timeout=timeout)
        self.assertEqual(code, 0, text)
        return out, text

    def check_files(self, out, stem, bench, columns, rows):
        """The three files of a figure set, checked against the contract; returns the JSON."""
        with open(os.path.join(out, stem + ".json")) as f:
            doc = json.load(f)
        self.assertEqual(list(doc.keys()), TOP_KEYS)
        self.assertEqual(doc["bench"], bench)
        self.assertEqual(doc["stem"], stem)
        self.assertRegex(doc["date"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual(set(doc["host"].keys()), HOST_KEYS)
        self.assertGreater(doc["host"]["cores"], 0)
        self.assertTrue(doc["command"].startswith("daqflow bench " + bench))
        self.assertIsInstance(doc["params"], dict)
        self.assertEqual(doc["columns"], columns)
        self.assertEqual(len(doc["rows"]), rows)
        for row in doc["rows"]:
            self.assertEqual(len(row), len(columns))

        with open(os.path.join(out, stem + ".csv"), newline="") as f:
            table = list(csv.reader(f))
        self.assertEqual(table[0], columns)
        self.assertEqual(len(table) - 1, rows)
        for line, row in zip(table[1:], doc["rows"]):
            for cell, value in zip(line, row):
                if isinstance(value, (int, float)):
                    self.assertAlmostEqual(float(cell), value, delta=abs(value) * 1e-5 + 1e-9)
                else:
                    self.assertEqual(cell, value)

        svg = ET.parse(os.path.join(out, stem + ".svg")).getroot()
        self.assertTrue(svg.tag.endswith("svg"))
        marks = [e for e in svg.iter() if e.tag.endswith("circle")]
        self.assertGreater(len(marks), 0, "the plot shows no point")
        return doc

    def generated_config(self, out, stem):
        """The configuration a figure ran (runs/STEM-0 for the first point of a sweep)."""
        for name in (stem + "-0", stem):
            path = os.path.join(out, "runs", name, "config.yaml")
            if os.path.exists(path):
                with open(path) as f:
                    return f.read()
        self.fail("no generated configuration for " + stem)

    def column(self, doc, name):
        i = doc["columns"].index(name)
        return [row[i] for row in doc["rows"]]

    def test_roundtrip_sweep_and_fit(self):
        out, text = self.bench(["roundtrip", "--transport", "tcp", "--sizes", "64..256",
                                "--iterations", "200", "--warmup", "20", "--fit", "64..256"])
        doc = self.check_files(out, "roundtrip-tcp", "roundtrip",
                               ["message_size", "rtt_min_us", "rtt_median_us", "rtt_p99_us",
                                "rtt_mean_us", "tau_median_us", "mb_s"], 3)
        self.assertEqual(self.column(doc, "message_size"), [64, 128, 256])
        for name in ["rtt_min_us", "rtt_median_us", "rtt_p99_us", "mb_s"]:
            self.assertTrue(all(v > 0 for v in self.column(doc, name)), name)
        for row in doc["rows"]:
            self.assertLessEqual(row[1], row[2])  # min <= median <= p99
            self.assertLessEqual(row[2], row[3])
        s = doc["summary"]
        for key in ["tau0_us", "c_us_per_kb", "r2", "fit_from", "fit_to", "rtt_median_64_us",
                    "rtt_min_64_us", "rtt_p99_64_us"]:
            self.assertIn(key, s)
        self.assertEqual((s["fit_from"], s["fit_to"]), (64, 256))
        self.assertEqual(s["rtt_min_64_us"], doc["rows"][0][1])
        svg = ET.parse(os.path.join(out, "roundtrip-tcp.svg")).getroot()
        dashed = [e for e in svg.iter() if e.tag.endswith("polyline")
                  and e.get("stroke-dasharray")]
        self.assertEqual(len(dashed), 1, "the fitted line is drawn")

    def test_stream_size_sweep_over_tcp(self):
        out, text = self.bench(["stream", "--pattern", "1to1", "--transport", "tcp", "--sizes",
                                "4096,65536", "--duration", "1", "--sample-ms", "100"])
        doc = self.check_files(out, "stream-1to1-tcp-size", "stream",
                               ["message_size", "depth", "senders", "receivers",
                                "mb_s_total_mean", "mb_s_total_sd", "mb_s_per_receiver_mean",
                                "mb_s_per_receiver_sd", "samples", "msgs_per_s"], 2)
        self.assertEqual(self.column(doc, "message_size"), [4096, 65536])
        self.assertTrue(all(v > 0 for v in self.column(doc, "mb_s_total_mean")))
        self.assertTrue(all(v > 0 for v in self.column(doc, "samples")))
        s = doc["summary"]
        self.assertEqual(s["message_size"], 4096)
        self.assertEqual(s["mb_s_total_mean"], doc["rows"][0][4])
        self.assertGreater(s["msgs_per_s"], 0)
        self.assertIn("stream 1to1 tcp 65536 B depth 8", text)
        # The generated configurations and logs are kept beside the results.
        self.assertTrue(os.path.exists(os.path.join(out, "runs", "stream-1to1-tcp-size-1",
                                                    "config.yaml")))

    def test_stream_two_stage_n_sweep(self):
        out, _ = self.bench(["stream", "--pattern", "nton", "--transport", "inproc", "--sizes",
                             "8192", "--n", "1,2", "--duration", "1", "--sample-ms", "100"])
        doc = self.check_files(out, "stream-nton-inproc-n", "stream",
                               ["message_size", "depth", "senders", "receivers",
                                "mb_s_total_mean", "mb_s_total_sd", "mb_s_per_receiver_mean",
                                "mb_s_per_receiver_sd", "samples", "msgs_per_s"], 2)
        self.assertEqual(self.column(doc, "senders"), [1, 2])
        self.assertEqual(self.column(doc, "receivers"), [1, 2])
        for row in doc["rows"]:
            # The total is the receivers' sum, the per-receiver figure their mean.
            self.assertAlmostEqual(row[4], row[6] * row[3], delta=row[4] * 1e-9)

    def test_stream_all_to_all(self):
        out, _ = self.bench(["stream", "--pattern", "nxn", "--transport", "tcp", "--sizes",
                             "16384", "--n", "2", "--depths", "2,4", "--duration", "1"])
        doc = self.check_files(out, "stream-nxn-tcp-depth", "stream",
                               ["message_size", "depth", "senders", "receivers",
                                "mb_s_total_mean", "mb_s_total_sd", "mb_s_per_receiver_mean",
                                "mb_s_per_receiver_sd", "samples", "msgs_per_s"], 2)
        self.assertEqual(self.column(doc, "depth"), [2, 4])
        self.assertTrue(all(v > 0 for v in self.column(doc, "mb_s_per_receiver_mean")))

    def test_timeslice_building_against_the_all_to_all_stream(self):
        out, _ = self.bench(["timeslice", "--transport", "shm", "--n", "2", "--sizes", "16384",
                             "--duration", "1.5", "--rounds", "1"])
        doc = self.check_files(out, "timeslice-shm-n2", "timeslice",
                               ["contribution_bytes", "wire_bytes", "round", "run", "slot_us",
                                "mb_s_per_node", "per_s", "incomplete", "clock_precision_ns",
                                "control_pct"], 4)
        self.assertEqual(self.column(doc, "run"), ["stream", "chaotic", "scheduled", "clock"])
        self.assertTrue(all(v > 0 for v in self.column(doc, "mb_s_per_node")[:3]))
        # The scheduled run goes in the builders' turns, its slot a builder's mean turn (the run's
        # duration over the turns it gave); only the clocks' run has a clock master, whose
        # precision is reported.
        stream, chaotic, scheduled, clock = doc["rows"]
        self.assertGreater(clock[8], 0)
        self.assertEqual(doc["summary"]["clock_precision_ns_quiet"], clock[8])
        rate = stream[5]
        self.assertEqual(chaotic[4], 0)
        self.assertGreater(scheduled[4], 0)
        self.assertLess(scheduled[4], 1.5e6)
        self.assertEqual(chaotic[8], -1)
        self.assertEqual(scheduled[8], -1)
        size = doc["summary"]["sizes"][0]
        self.assertEqual(size["contribution_bytes"], 16384)
        self.assertAlmostEqual(size["chaotic_to_stream"], chaotic[5] / rate, delta=1e-9)
        self.assertAlmostEqual(size["scheduled_to_stream"], scheduled[5] / rate, delta=1e-9)
        # The control traffic: acknowledgements of 16 B per contribution of 16 kB (and the
        # turns in the scheduled run), a small share of the bytes; none in the stream.
        self.assertEqual(stream[9], 0)
        for row in (chaotic, scheduled):
            self.assertGreater(row[9], 0.01, row)
            self.assertLess(row[9], 5, row)
        self.assertEqual(size["chaotic_control_pct"], chaotic[9])
        config = self.generated_config(out, "timeslice-shm-n2-16384-scheduled-1")
        self.assertNotIn("type: clock_master", config)
        self.assertIn("order: scheduled", config)
        self.assertNotIn("slot_us", config)

    EVB_COLUMNS = ["rus", "bus", "rubu", "feds_per_ru", "fragment_mean", "round", "run",
                   "message_bytes", "events_per_s", "mb_s", "us_per_event"]

    def test_event_builder_topologies_beside_their_raw_stream(self):
        out, _ = self.bench(["evb", "--transport", "inproc", "--topologies", "1x1,2x1",
                             "--fragment-sizes", "1024", "--duration", "1.5", "--rounds", "1"])
        doc = self.check_files(out, "evb-scaling-inproc", "evb", self.EVB_COLUMNS, 4)
        self.assertEqual(self.column(doc, "rus"), [1, 1, 2, 2])
        self.assertEqual(self.column(doc, "run"), ["stream", "evb", "stream", "evb"])
        for row in doc["rows"]:
            self.assertGreater(row[8], 0)
            self.assertGreater(row[9], 0)
            self.assertAlmostEqual(row[10], 1e6 / row[8], delta=row[10] * 1e-9)
        # A readout's part of a block: its header, 32 entries, 32 x 8 fragments of 1 kB.
        self.assertEqual(doc["rows"][0][7], 48 + 32 * 8 + 32 * 8 * 1024)
        points = doc["summary"]["points"]
        self.assertEqual([p["topology"] for p in points], ["1x1", "2x1"])
        for p, stream, evb in zip(points, doc["rows"][0::2], doc["rows"][1::2]):
            self.assertEqual(p["stream_mb_s"], stream[9])
            self.assertEqual(p["evb_mb_s"], evb[9])
            self.assertAlmostEqual(p["evb_to_stream"], evb[9] / stream[9], delta=1e-9)
        self.assertEqual(doc["summary"]["events_per_s"], doc["rows"][1][8])
        self.assertIn("raw stream of the same shape", doc["params"]["reference"])
        config = self.generated_config(out, "evb-scaling-inproc-1-1-stream")
        self.assertEqual(config.count("type: source"), 2)
        self.assertEqual(config.count("type: sink"), 1)

    def test_single_stage_event_builder_over_tcp(self):
        out, _ = self.bench(["evb", "--transport", "tcp", "--topologies", "", "--rubu", "2",
                             "--fragment-sizes", "512", "--duration", "1.5", "--rounds", "1"])
        doc = self.check_files(out, "evb-rubu2-tcp", "evb", self.EVB_COLUMNS, 2)
        self.assertEqual(doc["rows"][0][:3], [2, 2, 1])
        self.assertEqual(self.column(doc, "run"), ["stream", "evb"])
        self.assertGreater(doc["summary"]["points"][0]["evb_to_stream"], 0)

    def check_compare(self, out, stem, kind, unit, better):
        doc = self.check_files(out, stem, "compare", ["measurement", "value"], 3)
        self.assertEqual(self.column(doc, "measurement"),
                         ["reference_before", "daqflow", "reference_after"])
        s = doc["summary"]
        self.assertEqual((s["kind"], s["unit"], s["better"]), (kind, unit, better))
        ref = s["reference"]
        self.assertGreater(ref["before"], 0)
        self.assertGreater(ref["after"], 0)
        self.assertAlmostEqual(ref["value"], (ref["before"] + ref["after"]) / 2)
        self.assertGreater(s["daqflow"]["value"], 0)
        expected = (s["daqflow"]["value"] / ref["value"] if better == "higher"
                    else ref["value"] / s["daqflow"]["value"])
        self.assertAlmostEqual(s["ratio"], expected)
        # One round: the round's ratio against the runs around it is the ratio.
        self.assertEqual(len(s["round_ratios"]), 1)
        self.assertAlmostEqual(s["paired_ratio"], expected)
        # The daqflow figure's own result files are there, as the summary names them.
        self.assertTrue(os.path.exists(os.path.join(out, s["daqflow"]["stem"] + ".json")))
        return doc

    def test_compare_memcpy_needs_no_tool(self):
        ports = PORTS.take(4, strict=True)
        out, text = self.bench(["compare", "--transport", "inproc", "--kind", "memcpy",
                                "--size", "65536", "--duration", "1",
                                "--reference-port", str(ports), "--rounds", "1"])
        doc = self.check_compare(out, "compare-memcpy-inproc-65536", "memcpy", "MB/s", "higher")
        self.assertEqual(doc["summary"]["reference"]["tool"], "memcpy")
        self.assertIn("ratio", text)

    def test_compare_tcp_stream_with_iperf3(self):
        self.assertIsNotNone(shutil.which("iperf3"), "iperf3 is missing (scripts/bootstrap)")
        ports = PORTS.take(4, strict=True)
        out, text = self.bench(["compare", "--transport", "tcp", "--kind", "stream", "--size",
                                "65536", "--duration", "1", "--reference-port", str(ports), "--rounds", "1"])
        doc = self.check_compare(out, "compare-stream-tcp-65536", "stream", "MB/s", "higher")
        self.assertEqual(doc["summary"]["reference"]["tool"], "iperf3")
        self.assertIn("-l 65536", doc["summary"]["reference"]["command"])
        # By default the sender and the receiver get a CPU each, daqflow's and iperf3's alike.
        usable = sorted(os.sched_getaffinity(0))
        if len(usable) >= 2:
            sender, receiver = usable[:2]
            self.assertEqual(doc["params"]["cpus"], [sender, receiver])
            self.assertIn("taskset -c %d " % sender, doc["summary"]["reference"]["command"])
            self.assertIn("--cpus %d,%d" % (sender, receiver), doc["command"])
            config = self.generated_config(out, doc["summary"]["daqflow"]["stem"])
            self.assertIn("id: src0, destinations: [sink0]", config)
            self.assertRegex(config, r"id: src0,.*cpu: %d\}" % sender)
            self.assertRegex(config, r"id: sink0,.*cpu: %d\}" % receiver)
        else:
            self.assertEqual(doc["params"]["cpus"], [])
            self.assertIn("--cpus none", doc["command"])

    def test_compare_small_messages_with_zeromq(self):
        # tcp against PUSH/PULL over tcp, shm against PUSH/PULL over ipc; zmq_bw (built beside
        # daqflow) prints its message rate, which the summary keeps beside the MB/s.
        for transport, scheme in (("tcp", "tcp://127.0.0.1:"), ("shm", "ipc:///tmp/")):
            ports = PORTS.take(5, strict=True)
            out, text = self.bench(["compare", "--transport", transport, "--kind", "stream",
                                    "--size", "64", "--depth", "64", "--duration", "1",
                                    "--reference", "zeromq", "--reference-port", str(ports),
                                    "--rounds", "1"])
            doc = self.check_compare(out, "compare-stream-%s-zeromq-64" % transport, "stream",
                                     "MB/s", "higher")
            ref = doc["summary"]["reference"]
            self.assertEqual(ref["tool"], "zeromq")
            self.assertIn(scheme, ref["command"])
            if transport == "tcp":
                self.assertIn("tcp://127.0.0.1:%d" % (ports + 4), ref["command"])
            for when in ("before", "after"):
                self.assertAlmostEqual(ref[when + "_msg_s"] * 64 / 1e6, ref[when], delta=0.01)
            self.assertIn("--reference zeromq", doc["command"])
        self.assertEqual([f for f in os.listdir("/tmp") if f.startswith("daqflow-zmq_bw-")], [],
                         "the ipc socket files are removed")
        code, text = self.daqflow(["bench", "compare", "--transport", "tcp", "--kind", "latency",
                                   "--reference", "zeromq", "--out", self.path("results")],
                                  timeout=60)
        self.assertNotEqual(code, 0)
        self.assertIn("zeromq measures message rates (--kind stream), not latency", text)

    def test_compare_ucx_with_ucp_am_bw_moving_written_data(self):
        # ucp_am_bw (built beside daqflow) moves data as the ucx transport does: through the
        # connection manager, a 40-byte header, written buffers, error handling when asked, as
        # many buffers a side as --reference-buffers and daqflow's depth in flight.
        ports = PORTS.take(6, strict=True)
        out, text = self.bench(["compare", "--transport", "ucx", "--kind", "stream", "--size",
                                "65536", "--depth", "3", "--duration", "1", "--ucx-tls", "tcp",
                                "--idle", "spin", "--reference", "ucp_am_bw",
                                "--reference-buffers", "4", "--reference-err-handling",
                                "--reference-port", str(ports), "--rounds", "1"])
        doc = self.check_compare(out, "compare-stream-ucx-ucp_am_bw-4buffers-e-65536", "stream",
                                 "MB/s", "higher")
        ref = doc["summary"]["reference"]
        self.assertEqual(ref["tool"], "ucp_am_bw")
        for option in ("--receive %d" % (ports + 5), "--send 127.0.0.1:%d" % (ports + 5),
                       "--size 65536", "--depth 3", "--buffers 4", "--header 40", "--written",
                       "--cm", "--peer", "UCX_TLS=tcp"):
            self.assertIn(option, ref["command"])
        self.assertEqual(doc["params"]["reference_buffers"], 4)
        self.assertTrue(doc["params"]["reference_err_handling"])
        self.assertIn("--reference ucp_am_bw --reference-buffers 4 --reference-err-handling",
                      doc["command"])
        with open(os.path.join(out, "runs", "compare-stream-ucx-ucp_am_bw-4buffers-e-65536",
                               "ucp_am_bw-sender.log")) as f:
            result = json.loads(f.read().strip().splitlines()[-1])
        self.assertEqual(result["size"], 65536)
        self.assertAlmostEqual(result["mb_s"], ref["after"], delta=0.01)
        code, text = self.daqflow(["bench", "compare", "--transport", "tcp", "--kind", "stream",
                                   "--reference", "ucp_am_bw", "--out", self.path("results")],
                                  timeout=60)
        self.assertNotEqual(code, 0)
        self.assertIn("ucp_am_bw is a stream reference for the ucx transport, not stream over tcp",
                      text)

    def test_compare_unpinned_leaves_placement_to_the_scheduler(self):
        ports = PORTS.take(4, strict=True)
        out, _ = self.bench(["compare", "--transport", "tcp", "--kind", "latency",
                             "--iterations", "500", "--duration", "1", "--rounds", "1",
                             "--cpus", "none", "--reference-port", str(ports)])
        doc = self.check_compare(out, "compare-latency-tcp-64", "latency", "us", "lower")
        self.assertEqual(doc["params"]["cpus"], [])
        self.assertNotIn("taskset", doc["summary"]["reference"]["command"])
        self.assertIn("--cpus none", doc["command"])
        self.assertNotIn("cpu:", self.generated_config(out, doc["summary"]["daqflow"]["stem"]))

    def test_cpus_are_checked(self):
        code, text = self.daqflow(["bench", "compare", "--transport", "tcp", "--cpus", "0,x",
                                   "--out", self.path("results")], timeout=30)
        self.assertNotEqual(code, 0)
        self.assertIn("--cpus: 'x' is not a CPU number", text)
        code, text = self.daqflow(["bench", "compare", "--transport", "mpi", "--cpus", "0,0",
                                   "--out", self.path("results")], timeout=30)
        self.assertNotEqual(code, 0)
        self.assertIn("--cpus does not apply to mpi", text)

    def test_compare_tcp_latency_with_sockperf(self):
        self.assertIsNotNone(shutil.which("sockperf"), "sockperf is missing (scripts/bootstrap)")
        ports = PORTS.take(4, strict=True)
        out, text = self.bench(["compare", "--transport", "tcp", "--kind", "latency",
                                "--iterations", "2000", "--duration", "1",
                                "--reference-port", str(ports), "--rounds", "1"])
        doc = self.check_compare(out, "compare-latency-tcp-64", "latency", "us", "lower")
        self.assertEqual(doc["summary"]["reference"]["tool"], "sockperf")
        self.assertEqual(doc["summary"]["statistic"], "min")
        self.assertIn("x the reference latency", text)

    def test_compare_rounds_alternate_reference_and_daqflow_and_take_medians(self):
        ports = PORTS.take(4, strict=True)
        out, text = self.bench(["compare", "--transport", "inproc", "--kind", "memcpy",
                                "--size", "65536", "--duration", "0.5", "--rounds", "3",
                                "--reference-port", str(ports)])
        doc = self.check_files(out, "compare-memcpy-inproc-65536", "compare",
                               ["measurement", "value"], 7)
        self.assertEqual(self.column(doc, "measurement"),
                         ["reference_before", "daqflow_1", "reference_2", "daqflow_2",
                          "reference_3", "daqflow_3", "reference_after"])
        s = doc["summary"]
        self.assertEqual(s["rounds"], 3)
        values = dict(doc["rows"])
        mine = [values["daqflow_%d" % k] for k in (1, 2, 3)]
        refs = [values[k] for k in ("reference_before", "reference_2", "reference_3",
                                    "reference_after")]
        self.assertEqual(s["daqflow"]["values"], mine)
        self.assertEqual(s["reference"]["values"], refs)
        self.assertAlmostEqual(s["daqflow"]["value"], sorted(mine)[1])
        self.assertAlmostEqual(s["reference"]["value"], (sorted(refs)[1] + sorted(refs)[2]) / 2)
        self.assertAlmostEqual(s["ratio"], s["daqflow"]["value"] / s["reference"]["value"])
        rounds = [mine[k] / ((refs[k] + refs[k + 1]) / 2) for k in range(3)]
        self.assertEqual(len(s["round_ratios"]), 3)
        for got, want in zip(s["round_ratios"], rounds):
            self.assertAlmostEqual(got, want)
        self.assertAlmostEqual(s["paired_ratio"], sorted(rounds)[1])
        self.assertIn("rounds against the reference runs around them: median", text)
        # Each round's daqflow figure has its own files; the summary names the median one.
        for stem in s["daqflow"]["stems"]:
            self.assertTrue(os.path.exists(os.path.join(out, stem + ".json")), stem)
        self.assertEqual(len(set(s["daqflow"]["stems"])), 3)
        median_stem = s["daqflow"]["stems"][mine.index(sorted(mine)[1])]
        self.assertEqual(s["daqflow"]["stem"], median_stem)
        self.assertIn("--rounds 3", doc["command"])

    def test_compare_mpi_with_distinct_reference_buffers(self):
        ports = PORTS.take(4, strict=True)
        out, text = self.bench(["compare", "--transport", "mpi", "--kind", "stream", "--size",
                                "65536", "--duration", "1", "--reference-buffers", "4",
                                "--reference-port", str(ports), "--rounds", "1"])
        doc = self.check_compare(out, "compare-stream-mpi-mpi_bw-4buffers-65536", "stream",
                                 "MB/s", "higher")
        self.assertEqual(doc["params"]["reference_buffers"], 4)
        self.assertEqual(doc["summary"]["reference"]["tool"], "mpi_bw")
        self.assertIn("--buffers 4", doc["summary"]["reference"]["command"])
        self.assertIn("--reference-buffers 4", doc["command"])
        # mpi_bw starts with the mpirun options of daqflow's own ranks; mpirun places both.
        self.assertIn("--bind-to none", doc["summary"]["reference"]["command"])
        self.assertIn("--mca pml ob1", doc["summary"]["reference"]["command"])
        self.assertEqual(doc["params"]["cpus"], [])

    def test_reference_buffers_are_for_mpi_bw_and_ucp_am_bw_only(self):
        code, text = self.daqflow(["bench", "compare", "--transport", "inproc", "--kind",
                                   "memcpy", "--reference-buffers", "4", "--out",
                                   self.path("results")], timeout=60)
        self.assertNotEqual(code, 0, text)
        self.assertIn("--reference-buffers is for mpi_bw and ucp_am_bw, not memcpy", text)

    def test_memcpy_sweep(self):
        out = self.path("results")
        code, text = self.daqflow(["bench", "memcpy", "--sizes", "4096,65536", "--duration",
                                   "0.05", "--out", out], timeout=60)
        self.assertEqual(code, 0, text)
        doc = self.check_files(out, "memcpy", "memcpy", ["message_size", "mb_s"], 2)
        self.assertTrue(all(v > 0 for v in self.column(doc, "mb_s")))
        self.assertIn("mb_s_4096", doc["summary"])

    def test_a_port_in_use_is_refused_before_anything_starts(self):
        base = PORTS.take(6)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", base + 4))  # the sink context's data port
            s.listen(1)
            code, text = self.daqflow(["bench", "stream", "--transport", "tcp", "--sizes", "4096",
                                       "--duration", "1", "--port-base", str(base), "--out",
                                       self.path("results")], timeout=60)
        self.assertNotEqual(code, 0)
        self.assertIn(f"port {base + 4} of context 'sink0' is already in use", text)
        self.assertIn("--port-base", text)

    def test_a_missing_reference_tool_names_its_package(self):
        env = dict(os.environ, PATH=self.path("empty-path"))
        done = subprocess.run([self.binary, "bench", "compare", "--transport", "tcp", "--kind",
                               "latency", "--out", self.path("results")], cwd=self.dir,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=60)
        text = done.stdout.decode()
        self.assertNotEqual(done.returncode, 0, text)
        self.assertIn("sockperf is not installed (Debian package sockperf", text)
        # Nothing ran: the reference comes first, before any daqflow figure.
        self.assertFalse(os.path.exists(self.path("results/roundtrip-tcp-64.json")))

    def test_a_transport_not_built_is_named(self):
        code, text = self.daqflow(["bench", "stream", "--transport", "nosuch", "--sizes", "4096",
                                   "--out", self.path("results")], timeout=30)
        self.assertNotEqual(code, 0)
        self.assertIn("transport 'nosuch' is not built", text)
        self.assertIn("tcp", text)


if __name__ == "__main__":
    unittest.main()
