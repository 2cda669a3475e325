"""daqflow against CMS-formatted streams, in real processes: FEROL blocks written here from the
format's definition (cms_formats.py) and cut at random points, CMS event numbers from 1 through a
resync and through a rollover of the 24-bit counter (with `daqflow fedsend`), bad blocks.

FED ports come from 24500-24999 (this file's range); control and data ports from the test lib.
"""

import json
import os
import glob
import random
import re
import socket
import time
import unittest

from cms_formats import FEROL_FIELDS, fed_fragment, ferol_blocks, free_ports, read_frd_file
from daqflow_testlib import PATIENT_BU_MS, DaqflowTestCase, http, rewrite_ports, wait_until

CONFIG = """\
run: {{number: 17, output: {output}}}
transports: {{default: tcp, max_message_size: 16777216}}
contexts:
  - name: evm
    host: 127.0.0.1
    control_port: 9500
    data_port: 9600
    applications:
      - {{type: evm, id: evm0, rus: [ru1], bus: [bu1], feds: 1, first_fed_id: 1024,
         input: {{kind: network, port: {evm_fed_port}, max_fragment_bytes: {max_fragment}}},
         event_numbers: cms, lumi_section_events: {lumi_events}}}
  - name: ru1
    host: 127.0.0.1
    control_port: 9501
    data_port: 9601
    applications:
      - {{type: ru, id: ru1, evm: evm0, feds: 2, first_fed_id: 1203,
         input: {{kind: network, port: {ru_fed_port}, max_fragment_bytes: {max_fragment}}}}}
  - name: bu1
    host: 127.0.0.1
    control_port: 9502
    data_port: 9602
    applications:
      - {{type: bu, id: bu1, evm: evm0, events_per_request: {per_request}, check_crc: true,
         timeout_ms: {patient_ms}, output: {output_spec}}}
"""

# Two BUs writing FRD files from emulated FEDs with CMS numbering (a resync every 7000 events,
# a luminosity section every 5000).
TWO_BUS = """\
run: {{number: 18, output: {output}}}
transports: {{default: tcp, max_message_size: 4194304}}
contexts:
  - name: evm
    host: 127.0.0.1
    control_port: 9500
    data_port: 9600
    applications:
      - {{type: evm, id: evm0, rus: [ru1], bus: [bu1, bu2], feds: 2, first_fed_id: 1024,
         event_numbers: cms, resync_every: 7000, lumi_section_events: 5000,
         trigger_rate_hz: 20000, heartbeat_timeout_ms: 1000,
         fragment_size: {{dist: fixed, mean: 256}}, payload: pattern}}
  - name: ru1
    host: 127.0.0.1
    control_port: 9501
    data_port: 9601
    applications:
      - {{type: ru, id: ru1, evm: evm0, feds: 2, first_fed_id: 1203,
         fragment_size: {{dist: fixed, mean: 512}}, payload: pattern}}
  - name: bu1
    host: 127.0.0.1
    control_port: 9502
    data_port: 9602
    applications:
      - {{type: bu, id: bu1, evm: evm0, events_per_request: 32, check_crc: true,
         timeout_ms: {patient_ms}, output: {{kind: frd, events_per_file: 400}}}}
  - name: bu2
    host: 127.0.0.1
    control_port: 9503
    data_port: 9603
    applications:
      - {{type: bu, id: bu2, evm: evm0, events_per_request: 32, check_crc: true,
         timeout_ms: {patient_ms}, output: {{kind: frd, events_per_file: 400}}}}
"""

# Two RUs and a BU writing FRD files from emulated FEDs with CMS numbering (a luminosity
# section every 3000 events); the BU builds an event without a lost RU's data after 300 ms.
TWO_RUS = """\
run: {{number: 19, output: {output}}}
transports: {{default: tcp, max_message_size: 4194304}}
contexts:
  - name: evm
    host: 127.0.0.1
    control_port: 9500
    data_port: 9600
    applications:
      - {{type: evm, id: evm0, rus: [ru1, ru2], bus: [bu1], feds: 2, first_fed_id: 1024,
         event_numbers: cms, lumi_section_events: 3000, trigger_rate_hz: 10000,
         fragment_size: {{dist: fixed, mean: 256}}, payload: pattern}}
  - name: ru1
    host: 127.0.0.1
    control_port: 9501
    data_port: 9601
    applications:
      - {{type: ru, id: ru1, evm: evm0, feds: 2, first_fed_id: 1203,
         fragment_size: {{dist: fixed, mean: 512}}, payload: pattern}}
  - name: ru2
    host: 127.0.0.1
    control_port: 9502
    data_port: 9602
    applications:
      - {{type: ru, id: ru2, evm: evm0, feds: 2, first_fed_id: 1300,
         fragment_size: {{dist: fixed, mean: 512}}, payload: pattern}}
  - name: bu1
    host: 127.0.0.1
    control_port: 9503
    data_port: 9603
    applications:
      - {{type: bu, id: bu1, evm: evm0, events_per_request: 16, check_crc: true, timeout_ms: 300,
         output: {{kind: frd, events_per_file: 400}}}}
"""

# Fragment sizes from 16 B to 64 kB: one word of payload, block boundaries and beyond.
SIZES = [16, 24, 4080, 4088, 4096, 8160, 8168, 29992, 65536]


def send_in_pieces(port, data, seed, bad=False):
    """Sends `data` to 127.0.0.1:port in pieces of random length, each its own segment. A `bad`
    stream may be cut short by the receiver, which closes it at the error."""
    rng = random.Random(seed)
    deadline = time.monotonic() + 30
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    with s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        at = 0
        while at < len(data):
            n = rng.randint(1, 9000)
            try:
                s.sendall(data[at:at + n])
            except (BrokenPipeError, ConnectionResetError):
                if not bad:
                    raise
                return
            at += n
            if rng.random() < 0.05:
                time.sleep(0.001)


class Cms(DaqflowTestCase):
    def start_run(self, output_spec="{kind: discard}", per_request=16, lumi_events=0,
                  max_fragment=65536):
        self.fed_ports = free_ports(24500, 24999, 4)
        text = rewrite_ports(CONFIG.format(
            output=self.path("data"), evm_fed_port=self.fed_ports + 2,
            ru_fed_port=self.fed_ports, output_spec=output_spec, per_request=per_request,
            lumi_events=lumi_events, max_fragment=max_fragment, patient_ms=PATIENT_BU_MS))
        control = [int(p) for p in re.findall(r"control_port\s*:\s*(\d+)", text)]
        self.evm_control, self.ru_control = control[0], control[1]
        config = self.write_config("cms.yaml", text)
        self.summary = self.path("summary.json")
        # A test stand of CMS's own numbering: runs 17, 18 and 19, again in each test.
        run = self.start(["run", config, "--duration", "0", "--summary", self.summary,
                          "--log-dir", self.path("logs"), "--reuse-run-number"], "run.log")

        def listening():
            self.assertIsNone(run.poll(), self.output_of("run.log"))
            try:
                status, body = http(self.ru_control, "GET", "/api/v1/apps/ru1", timeout=1.0)
            except OSError:
                return False
            return status == 200 and body.get("state") in ("Ready", "Enabling", "Enabled")
        wait_until(listening, 30, "ru1 configured")
        return run

    def stop_when_triggered(self, run, events, timeout=120):
        def triggered():
            self.assertIsNone(run.poll(), self.output_of("run.log"))
            status, body = http(self.evm_control, "GET", "/api/v1/apps/evm0", timeout=2.0)
            return status == 200 and body["metrics"].get("events_triggered", 0) >= events
        wait_until(triggered, timeout, f"{events} events at the EVM")
        return self.stop_run(run)

    def results(self):
        with open(self.summary) as f:
            return json.load(f)["applications"]

    def logs(self):
        text = ""
        for name in os.listdir(self.path("logs")):
            with open(os.path.join(self.path("logs"), name), errors="replace") as f:
                text += f.read()
        return text

    def test_ferol_blocks_cut_anywhere_with_a_resync_are_built_byte_exact_into_frd_files(self):
        # 60 events: numbers 1..40, a resync, 1..20; every FED's fragments 16 B to 64 kB, in
        # FEROL blocks made here from the field table, sent in pieces cut anywhere.
        numbers = list(range(1, 41)) + list(range(1, 21))
        run = self.start_run("{kind: frd, events_per_file: 10}", lumi_events=25)
        fragments = {fed: [fed_fragment(fed, n, SIZES[(k + fed) % len(SIZES)] // 8 - 2)
                           for k, n in enumerate(numbers)] for fed in (1024, 1203, 1204)}
        streams = {fed: b"".join(ferol_blocks(fed, f) for f in frags)
                   for fed, frags in fragments.items()}
        send_in_pieces(self.fed_ports + 2, streams[1024], 1)
        send_in_pieces(self.fed_ports, streams[1203], 2)
        send_in_pieces(self.fed_ports + 1, streams[1204], 3)
        self.assertEqual(self.stop_when_triggered(run, 60), 0, self.output_of("run.log"))
        bu = self.results()["bu1"]["results"]
        self.assertEqual(bu["events_written"], 60)
        self.assertEqual(bu["events_corrupted"], 0)
        self.assertEqual(bu["events_incomplete"], 0)

        # Read with the independent reader: event k is the EVM's fragment, then the RU's two,
        # byte for byte as made here, in sections of 25 events.
        run_dir = os.path.join(self.path("data"), "bu1", "run000017")
        events = []
        for path in sorted(glob.glob(os.path.join(run_dir, "*.raw"))):
            f = read_frd_file(path)
            events += [(lumi, event, data)
                       for (_, lumi, event, _), data in zip(f["events"], f["data"])]
        self.assertEqual([(lumi, event) for lumi, event, _ in events],
                         [(1 + k // 25, n) for k, n in enumerate(numbers)])
        for k, (_, _, data) in enumerate(events):
            self.assertEqual(data, b"".join(fragments[fed][k] for fed in (1024, 1203, 1204)),
                             f"event {k}")
        code, out = self.daqflow(["dump", run_dir])
        self.assertEqual(code, 0, out)

    def test_frd_files_per_luminosity_section_are_read_back_by_an_independent_reader(self):
        # 300 events, numbers 1..200 then a resync and 1..100, sections of 120 events, files of
        # at most 50 events: sections 1 and 2 of 120 events in 3 files, section 3 of 60 in 2.
        run = self.start_run("{kind: frd, events_per_file: 50}", lumi_events=120)
        common = ["--events", "300", "--numbering", "cms", "--resync-after", "200"]
        code, out = self.daqflow(["fedsend", f"127.0.0.1:{self.fed_ports + 2}", "--fed", "1024",
                                  "--size", "64"] + common)
        self.assertEqual(code, 0, out)
        code, out = self.daqflow(["fedsend", f"127.0.0.1:{self.fed_ports}", "--fed", "1203",
                                  "--feds", "2", "--lognormal", "2048", "1024", "--max-size",
                                  "16384"] + common)
        self.assertEqual(code, 0, out)
        self.assertEqual(self.stop_when_triggered(run, 300), 0, self.output_of("run.log"))

        run_dir = os.path.join(self.path("data"), "bu1", "run000017")
        names = sorted(os.listdir(run_dir))
        raws = [n for n in names if n.endswith(".raw")]
        self.assertEqual(raws, [f"run000017_ls{ls:04d}_index{i:06d}.raw"
                                for ls, files in ((1, 3), (2, 3), (3, 2)) for i in range(files)])
        self.assertNotIn("open", names)  # nothing left being written
        with open(os.path.join(run_dir, "fu.lock")) as f:
            self.assertEqual(f.read(), "1 0")

        def data_of(name):
            with open(os.path.join(run_dir, name)) as f:
                doc = json.load(f)
            self.assertTrue(os.path.exists(doc["definition"]), doc)
            return [int(v) for v in doc["data"]]

        seen = []
        per_section = {}
        for name in raws:
            f = read_frd_file(os.path.join(run_dir, name))
            lumi = int(name[12:16])
            self.assertEqual(f["lumi"], lumi)
            self.assertEqual(data_of(name[:-4] + ".jsn"), [len(f["events"]), f["size"]])
            section = per_section.setdefault(lumi, [0, 0, 0])
            section[0] += len(f["events"])
            section[1] += 1
            section[2] += f["size"]
            for run_number, ev_lumi, event, feds in f["events"]:
                self.assertEqual((run_number, ev_lumi), (17, lumi))
                # CMSSW walks from the end: the RU's FEDs, then the EVM's; all of this event.
                self.assertEqual(sorted(fed for fed, _ in feds), [1024, 1203, 1204])
                self.assertEqual({l1 for _, l1 in feds}, {event})
                seen.append((ev_lumi, event))
        expected = [(1 + k // 120, k + 1 if k < 200 else k - 199) for k in range(300)]
        self.assertEqual(seen, expected)
        for lumi, (events, files, size) in per_section.items():
            self.assertEqual(data_of(f"run000017_ls{lumi:04d}_EoLS.jsn"),
                             [events, files, events, 0, size])
        self.assertEqual(data_of("run000017_ls0000_EoR.jsn"), [300, 8, 3, 3])

        code, out = self.daqflow(["dump", run_dir])
        self.assertEqual(code, 0, out)
        self.assertIn("300 events in 8 files, all verified", out)

    def test_a_bu_killed_while_writing_frd_files_leaves_every_event_on_disk_once(self):
        text = rewrite_ports(TWO_BUS.format(output=self.path("data"), patient_ms=PATIENT_BU_MS))
        r = self.lose_bu_mid_run(text, "two-bus.yaml", before=8000)
        self.assertEqual(r["lost_bus"], ["bu2"], r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["events_in_doubt"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)

        # Every event once, read from both BUs' files with the independent reader.
        seen = []
        for bu in ("bu1", "bu2"):
            run_dir = os.path.join(self.path("data"), bu, "run000018")
            self.assertFalse(os.path.exists(os.path.join(run_dir, "open")), bu)
            for path in sorted(glob.glob(os.path.join(run_dir, "*.raw"))):
                for _, lumi, event, feds in read_frd_file(path)["events"]:
                    self.assertEqual(len(feds), 4)
                    seen.append((lumi, event))
            code, out = self.daqflow(["dump", run_dir])
            self.assertEqual(code, 0, out)
        expected = [(1 + k // 5000, k % 7000 + 1) for k in range(r["events_built"])]
        self.assertEqual(len(seen), len(set(seen)), "an event written twice")
        self.assertEqual(sorted(seen), sorted(expected))
        print("\n" + [line for line in self.output_of("run.log").splitlines()
                       if "bu2: salvaged" in line][0], flush=True)

    def test_a_killed_ru_leaves_no_incomplete_event_for_the_hlt_and_fails_the_run_naming_it(self):
        text = rewrite_ports(TWO_RUS.format(output=self.path("data")))
        run, control, built = self.start_polled_run(text, "two-rus.yaml")
        wait_until(lambda: built() >= 4000, 90, "4000 events built")
        self.kill_context(control["ru2"])
        self.assertNotEqual(run.wait(timeout=90), 0, self.output_of("run.log"))
        with open(self.path("summary.json")) as f:
            summary = json.load(f)
        self.assertEqual(summary["status"], "failed")
        # The cause first: the RU, not what its loss led to at the EVM or the BU.
        print(f"\nfailure: {summary['failure']}", flush=True)
        self.assertIn("ru2", summary["failure"])
        self.assertNotIn("no BU left", summary["failure"])
        bu = summary["applications"]["bu1"]["results"]
        print(f"bu1: {bu['events_built']} complete, {bu['events_incomplete']} incomplete, "
              f"{bu['events_written']} written, {bu['events_dropped']} dropped", flush=True)

        # The closed files: every event whole (the EVM's, ru1's and ru2's FEDs), once, and as
        # many as the BU counts written; the EoLS files count the dropped ones lost.
        run_dir = os.path.join(self.path("data"), "bu1", "run000019")
        seen = []
        for path in sorted(glob.glob(os.path.join(run_dir, "*.raw"))):
            for _, lumi, event, feds in read_frd_file(path)["events"]:
                self.assertEqual(sorted(fed for fed, _ in feds),
                                 [1024, 1025, 1203, 1204, 1300, 1301], (lumi, event))
                seen.append((lumi, event))
        self.assertEqual(len(seen), len(set(seen)), "an event written twice")
        self.assertEqual(len(seen), bu["events_written"])
        # Every event complete at the BU (built with every RU's data and granted) is there.
        self.assertEqual(bu["events_written"], bu["events_built"])
        lost = 0
        for path in glob.glob(os.path.join(run_dir, "*_EoLS.jsn")):
            with open(path) as f:
                values = [int(v) for v in json.load(f)["data"]]
            self.assertEqual(values[2], values[0] + values[3], path)
            lost += values[3]
        self.assertEqual(lost, bu["events_dropped"])
        self.assertEqual(summary["results"].get("events_dropped", 0), bu["events_dropped"])
        code, out = self.daqflow(["dump", run_dir])
        self.assertEqual(code, 0, out)

    def test_a_stream_through_a_rollover_and_a_resync_is_built_without_error(self):
        # 2^24 + 84 events of 16-byte fragments: 1 .. 2^24 - 1, 0, 1 .. 34, a resync, 1 .. 50.
        events, resync_after = (1 << 24) + 84, (1 << 24) + 34
        run = self.start_run(per_request=2048, max_fragment=64, lumi_events=4_000_000)
        common = ["--events", str(events), "--size", "16", "--numbering", "cms",
                  "--resync-after", str(resync_after)]
        evm = self.start(["fedsend", f"127.0.0.1:{self.fed_ports + 2}", "--fed", "1024"] + common,
                         "fedsend-evm.log")
        code, out = self.daqflow(["fedsend", f"127.0.0.1:{self.fed_ports}", "--fed", "1203",
                                  "--feds", "2"] + common, timeout=600)
        self.assertEqual(code, 0, out)
        self.assertEqual(evm.wait(timeout=600), 0, self.output_of("fedsend-evm.log"))
        self.assertEqual(self.stop_when_triggered(run, events, timeout=600), 0,
                         self.output_of("run.log"))
        apps = self.results()
        self.assertEqual(apps["evm0"]["results"]["events_triggered"], events)
        bu = apps["bu1"]["results"]
        self.assertEqual(bu["events_built"], events)
        self.assertEqual(bu["events_corrupted"], 0)  # every FED's L1 id matched the EVM's id
        self.assertEqual(bu["events_incomplete"], 0)
        self.assertNotIn("out of sequence", self.logs())

    def test_a_bad_block_of_each_kind_fails_the_run_naming_the_fed_the_event_and_the_block(self):
        # FED 1203's fragments 1, 2, 3, a resync, 1, 2, 3 (8816 bytes each: two full blocks and
        # an unpadded last one of 656 bytes); the fifth (event 2 after the resync) spoilt in one
        # block's header, or cut short within its second block. Errors name the L1 id and the
        # resync count, not daqflow's count of fragments (4).
        def field(name, value, block):
            def edit(index, f):
                if index == block:
                    f[name] = value(f[name]) if callable(value) else value
            return edit
        numbers = [1, 2, 3, 1, 2, 3]
        at = "FED 1203 event 2 (resync 1): block"
        kinds = [
            ("signature", field("signature", 0x4759, 1),
             f"{at} 1: bad FEROL signature (the stream is out of step)"),
            ("FED id", field("fed", 1205, 1),
             f"{at} 1: the FEROL header names FED 1205 (wrong connection?)"),
            ("order", field("packet", 2, 1),
             f"{at} 1: packet number 2, expected 1 (blocks out of order or lost)"),
            ("first flag missing", field("first", False, 0),
             f"{at} 0: the fragment's first block lacks the first-block flag"),
            ("first flag inside", field("first", True, 2),
             f"{at} 2: first-block flag within a fragment (its last block missing)"),
            ("event number", field("event", lambda e: e + 7, 2),
             f"{at} 2: the FEROL header says event number 9, the fragment's first block 2"),
            ("length", field("words", 0, 1),
             f"{at} 1: FEROL block length is 0 or above 4080 bytes"),
            ("truncated", "cut",
             "FED 1203 event 2 (resync 1): stream truncated: the connection from 127.0.0.1:"),
        ]
        for name, edit, message in kinds:
            with self.subTest(kind=name):
                run = self.start_run()
                send_in_pieces(self.fed_ports + 2, b"".join(
                    ferol_blocks(1024, fed_fragment(1024, n, 1000)) for n in numbers), 4)
                stream = b""
                for k, n in enumerate(numbers):
                    blocks = ferol_blocks(1203, fed_fragment(1203, n, 1100),
                                          edit=edit if k == 4 and edit != "cut" else None)
                    if k == 4 and edit == "cut":
                        stream += blocks[:16 + 4080 + 16 + 100]  # 100 bytes into block 1
                        break
                    stream += blocks
                send_in_pieces(self.fed_ports, stream, 5, bad=True)
                self.assertNotEqual(run.wait(timeout=60), 0)
                self.assertIn(message, self.output_of("run.log") + self.logs())

    def test_a_skipped_event_number_is_reported_with_the_fed_and_the_event(self):
        run = self.start_run()
        send_in_pieces(self.fed_ports + 2, b"".join(
            ferol_blocks(1024, fed_fragment(1024, n, 10)) for n in (1, 2, 3)), 6)
        send_in_pieces(self.fed_ports, b"".join(
            ferol_blocks(1203, fed_fragment(1203, n, 10)) for n in (1, 2, 4)), 7, bad=True)
        self.assertNotEqual(run.wait(timeout=60), 0)
        self.assertIn("FED 1203 event 4: event number out of sequence: skipped from event number "
                      "2 to 4 (a resync restarts at 1)", self.output_of("run.log") + self.logs())

    def test_fedsend_frames_blocks_as_cms_equipment_does(self):
        # What fedsend writes, read with the field table: big-endian words, signature 0x475A.
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            port = server.getsockname()[1]
            sender = self.start(["fedsend", f"127.0.0.1:{port}", "--fed", "1300", "--events",
                                 "3", "--size", "6000", "--numbering", "cms"], "fedsend.log")
            conn, _ = server.accept()
            with conn:
                data = b""
                while chunk := conn.recv(65536):
                    data += chunk
        self.assertEqual(sender.wait(timeout=30), 0, self.output_of("fedsend.log"))
        self.assertEqual(data[:2], b"\x47\x5a")
        at, blocks = 0, []
        while at < len(data):
            words = [int.from_bytes(data[at + 8 * i:at + 8 * i + 8], "big") for i in (0, 1)]
            fields = {name: (words[word] >> low) & ((1 << width) - 1)
                      for name, (word, low, width) in FEROL_FIELDS.items()}
            blocks.append(fields)
            at += 16 + fields["words"] * 8
        self.assertEqual(at, len(data))
        # 6000 bytes a fragment: a full block of 510 words and one of 240, per event 1, 2, 3.
        self.assertEqual([(b["signature"], b["fed"], b["event"], b["packet"], b["first"],
                           b["last"], b["words"]) for b in blocks],
                         [(0x475A, 1300, n, p, int(p == 0), int(p == 1), 510 if p == 0 else 240)
                          for n in (1, 2, 3) for p in (0, 1)])

if __name__ == "__main__":
    unittest.main()
