"""scripts/bench-report and the micro-benchmarks: the generated performance page lists a ratio
(or the reason it has none) for every reference pair, and every figure in its tables traces to
a number of the result file that the row names; daqflow_micro writes valid Google Benchmark JSON.

Two sources of result files: real short `daqflow bench` runs when this daqflow has the bench
command, and files written here per the result-file contract (a format test of the generator).
"""

import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import daqflow_testlib as lib

SCRIPT = os.path.join(lib.ROOT, "scripts", "bench-report")
SEEDS = os.path.join(lib.ROOT, "bench", "seed-figures.json")
TIMEOUT = 240


def load_report_module():
    loader = importlib.machinery.SourceFileLoader("bench_report", SCRIPT)
    spec = importlib.util.spec_from_loader("bench_report", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


REPORT = load_report_module()
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def numbers_of(obj):
    """Every number anywhere in a JSON value."""
    if isinstance(obj, bool):
        return []
    if isinstance(obj, (int, float)):
        return [obj]
    if isinstance(obj, dict):
        return [n for v in obj.values() for n in numbers_of(v)]
    if isinstance(obj, list):
        return [n for v in obj for n in numbers_of(v)]
    return []


def formatted(obj, scales=(1,)):
    return {REPORT.fmt(n / s if s != 1 else n) for n in numbers_of(obj) for s in scales}


def parse_tables(page):
    """The page's tables: (line before the table, header cells, rows of cells)."""
    tables = []
    lines = page.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("| ---"):
            before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            header = split_row(lines[i])
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("| "):
                rows.append(split_row(lines[i]))
                i += 1
            tables.append((before, header, rows))
        else:
            i += 1
    return tables


def split_row(line):
    cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [c.strip().replace("\\|", "|") for c in cells]


def backticked(text):
    m = re.search(r"`([^`]+)`", text)
    return m.group(1) if m else None


class ReportChecks:
    """Checks shared by the tests: run the generator, then read the page back."""

    def run_report(self, results, page):
        proc = subprocess.run(["python3", SCRIPT, results, page], capture_output=True, text=True,
                              timeout=TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        with open(page, encoding="utf-8") as f:
            return f.read()

    def result_files(self, results):
        files = {}
        for dirpath, dirnames, names in os.walk(results):
            dirnames[:] = [d for d in dirnames if d != "runs"]  # configs and logs of the runs
            for name in names:
                if name.endswith(".json"):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding="utf-8") as f:
                        files[os.path.relpath(path, results)] = json.load(f)
        return files

    def check_every_figure_traces(self, page, files):
        """Each cell that is a number must be a number of the file its row (or column, or the
        line above its table) names, or a seed figure in a seed row."""
        with open(SEEDS, encoding="utf-8") as f:
            # Seed figures appear as published, in JSON's spelling.
            seed_numbers = {json.dumps(n) for n in numbers_of(json.load(f))}
        checked = 0
        for before, header, rows in parse_tables(page):
            table_file = backticked(before)
            if table_file not in files:
                table_file = None
            for row in rows:
                row_file = next((c for c in row if c in files), None) or table_file
                is_seed = row[0].startswith("seed ") or (row_file is None and header[0] ==
                                                         "buffer (B)")
                # A cell may list several runs: "6.75 / 7.12".
                cells = [(col, part) for col, cell in enumerate(row) for part in cell.split(" / ")]
                for col, cell in cells:
                    if not NUMBER.fullmatch(cell):
                        continue
                    name = header[col]
                    col_file = backticked(name)
                    if col_file in files:
                        allowed = formatted(files[col_file])
                    elif name == "daqflow/reference":
                        s = files[row_file]["summary"]
                        allowed = {REPORT.fmt(s["daqflow"]["value"] / s["reference"]["value"])}
                    elif row_file is not None and "benchmarks" in files[row_file]:
                        bench = [b for b in files[row_file]["benchmarks"] if b["name"] == row[0]]
                        self.assertEqual(len(bench), 1, row)
                        allowed = formatted(bench[0], (1, 1e6, 1e9))
                    elif row_file is not None:
                        allowed = formatted(files[row_file])
                    elif is_seed:
                        allowed = seed_numbers
                    else:
                        self.fail("a figure with no file to trace it to: %r in %r" % (cell, row))
                    self.assertIn(cell, allowed, "%s in row %r (file %s)" % (cell, row, row_file))
                    checked += 1
        return checked

    def compare_rows(self, page):
        for _, header, rows in parse_tables(page):
            if header and header[0] == "pair":
                return header, rows
        self.fail("no comparison table on the page")
        return None

    def check_every_pair_listed(self, page, files):
        header, rows = self.compare_rows(page)
        ratio = header.index("ratio")
        file_col = header.index("file")
        for _, label, _, _ in REPORT.STANDARD_PAIRS:
            mine = [r for r in rows if r[0] == label]
            self.assertTrue(mine, "no row for %s" % label)
            for r in mine:
                if r[file_col] in files:
                    s = files[r[file_col]]["summary"]
                    self.assertEqual(r[ratio], REPORT.fmt(s["ratio"]), r)
                else:
                    self.assertRegex(r[ratio], r"^(not run|failed)", r)
        return rows


def contract_files(results):
    """Result files as `daqflow bench` writes them (bench-format contract), a few of each kind;
    compare results only for some pairs, and steps.jsonl saying why one of the others did not
    run."""
    host = {"hostname": "bench-host", "cores": 2, "cpu_model": "Test CPU @ 2.30GHz",
            "kernel": "6.1.0-test", "memory_gib": 24}
    date = "2026-11-22T10:00:00Z"

    def write(rel, obj, svg=True):
        path = os.path.join(results, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(obj, f)
        if svg:
            with open(path[:-5] + ".svg", "w", encoding="utf-8") as f:
                f.write('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>')

    def result(bench, stem, transport, command, columns, rows, summary, params=None):
        return {"bench": bench, "stem": stem, "transport": transport, "date": date,
                "host": host, "command": command, "params": params or {},
                "columns": columns, "rows": rows, "summary": summary}

    write("roundtrip-tcp.json", result(
        "roundtrip", "roundtrip-tcp", "tcp", "daqflow bench roundtrip --transport tcp",
        ["message_size", "rtt_min_us", "rtt_median_us", "rtt_p99_us", "mb_s"],
        [[64, 11.25, 14.5, 31.75, 8.8], [8192, 19.5, 23.25, 60.125, 704.5]],
        {"tau0_us": 7.4375, "c_us_per_kb": 0.1296, "binf_mb_s": 7716.05, "r2": 0.9953,
         "fit_from": 8192, "fit_to": 524288, "rtt_median_64_us": 14.5, "rtt_min_64_us": 11.25,
         "rtt_p99_64_us": 31.75}))
    stream_cols = ["message_size", "depth", "senders", "receivers", "mb_s_total_mean",
                   "mb_s_total_sd", "mb_s_per_receiver_mean", "mb_s_per_receiver_sd", "samples"]
    write("stream-1to1-tcp-size.json", result(
        "stream", "stream-1to1-tcp-size", "tcp",
        "daqflow bench stream --pattern 1to1 --transport tcp --sizes 1024,4096,1048576",
        stream_cols,
        [[1024, 8, 1, 1, 301.5, 12.25, 301.5, 12.25, 18],
         [4096, 8, 1, 1, 1012.75, 30.5, 1012.75, 30.5, 18],
         [1048576, 8, 1, 1, 3511.25, 60.75, 3511.25, 60.75, 18]],
        {"mb_s_total_mean": 301.5, "mb_s_total_sd": 12.25, "mb_s_per_receiver_mean": 301.5,
         "message_size": 1024, "depth": 8, "senders": 1, "receivers": 1, "msgs_per_s": 294434.5},
        {"pattern": "1to1", "sizes": [1024, 4096, 1048576]}))
    write("evb-3x2-tcp.json", result(
        "evb", "evb-3x2-tcp", "tcp", "daqflow bench evb --transport tcp --topologies 3x2",
        ["topology", "rus", "bus", "feds_per_ru", "fragment_mean", "events_per_s", "mb_s",
         "us_per_event"],
        [["3x2", 3, 2, 8, 2048, 40812.5, 2676.25, 24.5]],
        {"events_per_s": 40812.5, "mb_s": 2676.25}))

    def compare(pair, kind, transport, size, unit, better, value, tool, before, after, ratio):
        stem = "compare-%s-%s-%d" % (kind, transport, size)
        write("compare/%s/%s.json" % (pair, stem), result(
            "compare", stem, transport,
            "daqflow bench compare --transport %s --kind %s --size %d" % (transport, kind, size),
            ["what", "value"], [["daqflow", value], ["reference", (before + after) / 2]],
            {"kind": kind, "size": size, "unit": unit, "better": better,
             "daqflow": {"value": value, "stem": "stream-1to1-%s-%d" % (transport, size),
                         "command": "daqflow bench stream ..."},
             "reference": {"tool": tool, "command": tool + " ...", "before": before,
                           "after": after, "value": (before + after) / 2},
             "ratio": ratio}), svg=False)

    compare("tcp-stream", "stream", "tcp", 1048576, "MB/s", "higher", 3511.25, "iperf3",
            3900.5, 3972.25, 3511.25 / 3936.375)
    compare("tcp-latency", "latency", "tcp", 64, "us", "lower", 11.25, "sockperf", 6.75, 7.125,
            6.9375 / 11.25)
    compare("inproc-memcpy", "memcpy", "inproc", 1048576, "MB/s", "higher", 9000.5, "memcpy",
            10000.25, 9800.75, 9000.5 / 9900.5)
    with open(os.path.join(results, "steps.jsonl"), "w", encoding="utf-8") as f:
        f.write(json.dumps({"step": "compare/ucx-shm", "status": "not run",
                            "why": "transport ucx is not built into build/bin/daqflow",
                            "command": "UCX_TLS=posix,cma,self daqflow bench compare ..."}) + "\n")
        f.write(json.dumps({"step": "compare/ofi-stream", "status": "failed",
                            "why": "exit 1: fi_pingpong: no provider", "command": "x"}) + "\n")
    with open(os.path.join(results, "micro.json"), "w", encoding="utf-8") as f:
        json.dump({"context": {"date": date, "host_name": "bench-host", "num_cpus": 2,
                               "mhz_per_cpu": 2300, "caches": [
                                   {"type": "Data", "level": 1, "size": 49152, "num_sharing": 1}]},
                   "benchmarks": [
                       {"name": "BM_HeaderEncode", "run_type": "iteration", "iterations": 26959864,
                        "real_time": 3.2154, "cpu_time": 3.0712, "time_unit": "ns",
                        "items_per_second": 325555000.5, "bytes_per_second": 13022200000.25},
                       {"name": "BM_PoolAcquireRelease", "run_type": "iteration",
                        "iterations": 1403188, "real_time": 56.125, "cpu_time": 56.0625,
                        "time_unit": "ns", "items_per_second": 17815800.5},
                       {"name": "BM_Broken", "run_type": "iteration", "error_occurred": True,
                        "error_message": "ring full", "iterations": 0, "real_time": 0,
                        "cpu_time": 0, "time_unit": "ns"}]}, f)


class BenchReportTest(ReportChecks, unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="daqflow-bench-report-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.results = os.path.join(self.tmp, "results")
        self.page = os.path.join(self.tmp, "docs", "performance.md")
        os.makedirs(self.results)

    def test_contract_files_give_a_traceable_page(self):
        contract_files(self.results)
        page = self.run_report(self.results, self.page)
        files = self.result_files(self.results)
        rows = self.check_every_pair_listed(page, files)
        self.assertGreater(self.check_every_figure_traces(page, files), 40)

        by_label = {r[0]: r for r in rows}
        self.assertIn("transport ucx is not built",
                      " ".join(by_label["ucx stream (UCX_TLS=posix,cma,self) vs ucx_perftest"]))
        self.assertIn("failed: exit 1: fi_pingpong: no provider",
                      " ".join(by_label["ofi stream vs fabtests"]))
        self.assertIn("not run: no result file",
                      " ".join(by_label["mpi stream vs mpi_bw (osu_bw's way: one buffer per side)"]))
        latency = by_label["tcp 64 B latency vs sockperf"]
        header, _ = self.compare_rows(page)
        self.assertEqual(latency[header.index("daqflow/reference")], REPORT.fmt(11.25 / 6.9375),
                         "x of the reference latency")
        self.assertEqual(latency[header.index("reference runs")], "6.75 / 7.12")
        self.assertEqual(latency[header.index("daqflow runs")], "11.2")

        # Machine, commands, plots, micro-benchmarks, the published figures, the list of what did
        # not run.
        for text in ("Test CPU @ 2.30GHz", "6.1.0-test",
                     "`daqflow bench roundtrip --transport tcp`",
                     "`daqflow bench compare --transport tcp --kind latency --size 64`",
                     "![roundtrip-tcp](performance/roundtrip-tcp.svg)",
                     "| BM_Broken | error: ring full |",
                     "- compare/ucx-shm: not run: transport ucx is not built",
                     "seed 000, table tab-ether-ib-tcp", "| 67.7 | 8.52 | 117 |", "| 954 |",
                     "| 3405.5 | 109.0 |", "| 120000 | - |", "| 5.5 | - | 935 |"):
            self.assertIn(text, page)
        self.assertTrue(os.path.isfile(os.path.join(self.tmp, "docs", "performance",
                                                    "roundtrip-tcp.svg")))
        # The published all-to-all table carries daqflow's sweep at the sizes both have.
        a2a = [t for t in parse_tables(page) if t[1][0] == "buffer (B)"]
        self.assertEqual(len(a2a), 1)
        header, table_rows = a2a[0][1], a2a[0][2]
        col = next(i for i, h in enumerate(header) if "stream-1to1-tcp-size.json" in h)
        sizes = {r[0]: r[col] for r in table_rows}
        self.assertEqual(sizes["1024"], "302")
        self.assertEqual(sizes["4096"], "1013")
        self.assertEqual(sizes["2048"], "-")

    def test_an_empty_folder_is_an_error_not_an_empty_page(self):
        proc = subprocess.run(["python3", SCRIPT, self.results, self.page], capture_output=True,
                              text=True, timeout=TIMEOUT)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("no result file", proc.stderr)
        self.assertFalse(os.path.exists(self.page))

    def test_real_bench_runs_give_a_traceable_page(self):
        daqflow = lib.daqflow_binary()
        usage = subprocess.run([daqflow, "--help"], capture_output=True, text=True,
                               timeout=60).stdout
        self.assertRegex(usage, re.compile(r"^ +bench +", re.MULTILINE),
                         "this daqflow has no bench command")
        port_base = lib.PORTS.take(40) if hasattr(lib, "PORTS") else None
        base = ["--out", self.results]
        if port_base is not None:
            base += ["--port-base", str(port_base)]
        runs = [
            ["roundtrip", "--transport", "tcp", "--sizes", "64..65536", "--fit", "8192..65536",
             "--iterations", "50"],
            ["stream", "--pattern", "1to1", "--transport", "tcp", "--sizes", "1024,65536",
             "--duration", "1"],
        ]
        for args in runs:
            proc = subprocess.run([daqflow, "bench"] + args + base, capture_output=True,
                                  text=True, timeout=TIMEOUT)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        page = self.run_report(self.results, self.page)
        files = self.result_files(self.results)
        self.assertGreaterEqual(len(files), 2)
        self.check_every_pair_listed(page, files)
        self.assertGreater(self.check_every_figure_traces(page, files), 10)
        kinds = sorted(o["bench"] for o in files.values())
        self.assertEqual(kinds, ["roundtrip", "stream"])
        for rel, obj in files.items():
            self.assertIn(obj["command"], page, rel)
            self.assertIn("](performance/%s.svg)" % obj["stem"], page, rel)


class MicroBenchmarkTest(ReportChecks, unittest.TestCase):
    def test_micro_benchmarks_write_json_the_report_reads(self):
        micro = os.path.join(os.path.dirname(lib.daqflow_binary()), "daqflow_micro")
        self.assertTrue(os.access(micro, os.X_OK), "%s is not built" % micro)
        tmp = tempfile.mkdtemp(prefix="daqflow-micro-")
        self.addCleanup(shutil.rmtree, tmp, True)
        results = os.path.join(tmp, "results")
        os.makedirs(results)
        out = os.path.join(results, "micro.json")
        proc = subprocess.run(
            [micro, "--benchmark_filter=BM_HeaderEncode$|BM_SpscPushPop$|BM_BlockBuild/rus:3/",
             "--benchmark_min_time=0.01", "--benchmark_format=json", "--benchmark_out=" + out],
            capture_output=True, text=True, timeout=TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(out, encoding="utf-8") as f:
            data = json.load(f)
        names = [b["name"] for b in data["benchmarks"]]
        self.assertIn("BM_HeaderEncode", names)
        self.assertIn("BM_SpscPushPop", names)
        self.assertIn("BM_BlockBuild/rus:3/check:1/crc:1", names)
        for b in data["benchmarks"]:
            self.assertFalse(b.get("error_occurred"), b)
            self.assertGreater(b["iterations"], 0, b)
            self.assertGreater(b["items_per_second"], 0, b)
        page = self.run_report(results, os.path.join(tmp, "performance.md"))
        files = self.result_files(results)
        self.assertGreater(self.check_every_figure_traces(page, files), 3 * len(names) - 1)
        # Nothing but micro-benchmarks: every reference pair is listed as not run.
        self.check_every_pair_listed(page, files)


if __name__ == "__main__":
    unittest.main()
