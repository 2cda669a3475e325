"""The installed SDK: daqflow installed into a temporary prefix (`cmake --install`), the
out-of-tree examples of examples/sdk built against it with nothing but find_package(daqflow) (and
the application type once more with pkg-config), then run.

The event builder fed by readout plugins (a digitizer's payloads for the EVM and one RU, a file
of FED fragments replayed for another) writes every event's fragments as the plugins made them:
checked byte for byte in its FRD files against what this file computes. The time-slice builder
fed by a microslice plugin writes every microslice as made (sizes and start times computed here,
contents verified against the plugin's own CRC-32C). The example application type runs in a
cluster like a built-in one (its settings' errors, its metric, its failure), and is refused when
built by another compiler. A plugin's error, a plugin of another ABI and a fragment tagged with
another event's number fail the run, saying so. Every installed header compiles alone against the
prefix.
"""

import glob
import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor

from cms_formats import fed_fragment, read_frd_file
from daqflow_testlib import ROOT, DaqflowTestCase, daqflow_binary, http, rewrite_ports, wait_until

SDK = os.path.join(ROOT, "examples", "sdk")
MASK64 = 2**64 - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def digitizer_payload(source, event, samples, seed=1):
    """The payload examples/sdk/digitizer.c gives FED `source` for event `event`."""
    drawn = splitmix64(seed ^ (source << 40) ^ event)
    amplitude = 500 + drawn % 2000
    words = [event * 25]
    for w in range(samples // 4):
        word = 0
        for q in range(4):
            j = w * 4 + q
            pulse = 0
            if 8 <= j < 12:
                pulse = amplitude * (j - 7) // 4
            elif 12 <= j < 36:
                pulse = amplitude * (36 - j) // 24
            word |= (200 + pulse + (splitmix64((drawn + j) & MASK64) & 7)) << (16 * q)
        words.append(word)
    return struct.pack(f"<{len(words)}Q", *words)


def microslice_sizes(eq_id, first_ns, count, microslice_ns, size=1024, seed=1):
    """The sizes examples/sdk/microslice_source.c gives `count` microslices from first_ns."""
    return [8 * (2 + splitmix64(seed ^ (eq_id << 48) ^ (first_ns + j * microslice_ns)) % (size // 4))
            for j in range(count)]


def fragments_of(data):
    """An FRD event's FED fragments, in order, as bytes."""
    out = []
    end = len(data)
    while end > 0:
        trailer = struct.unpack_from("<Q", data, end - 8)[0]
        size = ((trailer >> 32) & 0xFFFFFF) * 8
        out.append(data[end - size:end])
        end -= size
    return out[::-1]


def fed_of(fragment):
    header = struct.unpack_from("<Q", fragment, 0)[0]
    return (header >> 8) & 0xFFF, (header >> 32) & 0xFFFFFF


def build(args, cwd, what):
    done = subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"{what} failed:\n{done.stdout.decode(errors='replace')}")
    return done.stdout.decode(errors="replace")


class Sdk(DaqflowTestCase):
    @classmethod
    def setUpClass(cls):
        """Installs daqflow into a prefix and builds examples/sdk against it, once for every
        test of the class."""
        cls.work = tempfile.mkdtemp(prefix="daqflow-sdk-")
        cls.prefix = os.path.join(cls.work, "prefix")
        build_tree = os.path.dirname(os.path.dirname(daqflow_binary()))
        build(["cmake", "--install", build_tree, "--prefix", cls.prefix], cls.work, "install")
        cls.examples = os.path.join(cls.work, "examples")
        build(["cmake", "-S", SDK, "-B", cls.examples, "-G", "Ninja",
               f"-DCMAKE_PREFIX_PATH={cls.prefix}"], cls.work, "configuring examples/sdk")
        build(["cmake", "--build", cls.examples], cls.work, "building examples/sdk")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def setUp(self):
        super().setUp()
        # The installed CLI, as a user of the SDK runs it.
        self.binary = os.path.join(self.prefix, "bin", "daqflow")

    def lib(self, name):
        return os.path.join(self.examples, f"lib{name}.so")

    def pkg_config(self, *args):
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(self.prefix, "lib", "pkgconfig"))
        done = subprocess.run(["pkg-config"] + list(args) + ["daqflow"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=True)
        return done.stdout.decode().split()

    # -- the event builder ------------------------------------------------------------------

    EVB = """\
run: {{output: {data}}}
transports: {{default: tcp, max_message_size: 4194304}}
contexts:
  - name: evm
    host: 127.0.0.1
    control_port: 9500
    data_port: 9600
    applications:
      - {{type: evm, id: evm0, rus: [ru1, ru2], bus: [bu1], feds: 1, first_fed_id: 10,
         input: {{kind: plugin, library: {digitizer}, config: "events={events} samples=32"}}}}
  - name: rus
    host: 127.0.0.1
    control_port: 9501
    data_port: 9601
    applications:
      - {{type: ru, id: ru1, evm: evm0, feds: 2, first_fed_id: 1203,
         input: {{kind: plugin, library: {replay}, config: "file={fragments}"}}}}
      - {{type: ru, id: ru2, evm: evm0, feds: 2, first_fed_id: 20,
         input: {{kind: plugin, library: {digitizer}, config: "{ru2_config}"}}}}
  - name: bu1
    host: 127.0.0.1
    control_port: 9502
    data_port: 9602
    applications:
      - {{type: bu, id: bu1, evm: evm0, output: {{kind: frd, events_per_file: 100}}}}
"""

    def evb_config(self, events, ru2_config=None):
        fragments = self.path("fragments.raw")
        with open(fragments, "wb") as f:
            for k in range(events):
                for fed in (1203, 1204):
                    f.write(fed_fragment(fed, k, 4 + (k * 7 + fed) % 60))
        return rewrite_ports(self.EVB.format(
            data=self.path("data"), digitizer=self.lib("digitizer"),
            replay=self.lib("fragment_replay"), fragments=fragments, events=events,
            ru2_config=ru2_config or f"events={events} samples=64"))

    def test_the_event_builder_writes_every_fragment_as_its_readout_plugins_made_it(self):
        events = 300
        run, _, metric = self.start_polled_run(self.evb_config(events), "evb.yaml")
        # The readouts are done after `events`: the last blocks close as the run halts.
        wait_until(lambda: metric("events_triggered") >= events, 120,
                   f"{events} events triggered")
        code = self.stop_run(run)
        self.assertEqual(code, 0, self.output_of("run.log"))
        with open(self.path("summary.json")) as f:
            results = json.load(f)["results"]
        self.assertEqual(results["events_built"], events, results)
        self.assertEqual(results["events_written"], events, results)

        written = []
        for path in sorted(glob.glob(os.path.join(self.path("data"), "bu1", "*", "*.raw"))):
            f = read_frd_file(path)  # every FED CRC-16 and event CRC-32C checked on the way
            written += [(event, data) for (_, _, event, _), data in zip(f["events"], f["data"])]
        self.assertEqual(sorted(e for e, _ in written), list(range(events)))
        for event, data in written:
            frags = fragments_of(data)
            self.assertEqual([fed_of(x) for x in frags],
                             [(10, event), (1203, event), (1204, event), (20, event),
                              (21, event)], event)
            self.assertEqual(frags[0][8:-8], digitizer_payload(10, event, 32), event)
            for fed, frag in zip((1203, 1204), frags[1:3]):
                self.assertEqual(frag, fed_fragment(fed, event, 4 + (event * 7 + fed) % 60),
                                 event)
            for fed, frag in zip((20, 21), frags[3:]):
                self.assertEqual(frag[8:-8], digitizer_payload(fed, event, 64), event)

    def test_a_readout_plugins_error_fails_the_run_naming_the_ru_and_its_message(self):
        config = self.evb_config(200, ru2_config="fail_at=40")
        code, out, summary = self.run_config(self.write_config("fail.yaml", config),
                                             "--duration", "30")
        self.assertNotEqual(code, 0, out)
        self.assertIn("ru2", summary["failure"], summary["failure"])
        self.assertIn("board lost its clock at event 40", summary["failure"])
        self.assertIn(self.lib("digitizer"), summary["failure"])

    def test_a_fragment_tagged_with_another_event_is_caught(self):
        config = self.evb_config(200, ru2_config="mislabel_at=30")
        code, out, summary = self.run_config(self.write_config("mislabel.yaml", config),
                                             "--duration", "30")
        self.assertNotEqual(code, 0, out)
        self.assertIn("ru2", summary["failure"])
        self.assertIn("FED 21: fragment tagged event number 31, the event built carries 30",
                      summary["failure"])

    def test_a_plugin_of_another_abi_version_is_refused_at_configure(self):
        source = self.path("abi2.c")
        with open(source, "w") as f:
            f.write("#include <daqflow/readout_plugin.h>\n"
                    "int daqflow_readout_abi(void) { return DAQFLOW_READOUT_ABI + 1; }\n"
                    "void* daqflow_readout_init(const daqflow_readout_setup* s,\n"
                    "                           daqflow_readout_info* i) { (void)s; (void)i;\n"
                    "  return 0; }\n"
                    "int daqflow_readout_produce(void* s, daqflow_readout_request* r) {\n"
                    "  (void)s; (void)r; return DAQFLOW_READOUT_FAILED; }\n")
        library = self.path("libabi2.so")
        build(["cc", "-shared", "-fPIC", "-Wall", "-Werror", "-I",
               os.path.join(self.prefix, "include"), "-o", library, source], self.dir,
              "the plugin of another ABI")
        config = self.evb_config(10).replace(self.lib("fragment_replay"), library)
        code, out, summary = self.run_config(self.write_config("abi.yaml", config),
                                             "--duration", "30")
        self.assertNotEqual(code, 0, out)
        self.assertIn("configur", out)
        self.assertIn(f"readout plugin '{library}' is built for readout ABI 2, this daqflow has "
                      "ABI 1", out)

    # -- the time-slice builder -------------------------------------------------------------

    TIMESLICE = """\
run: {{output: {data}}}
transports: {{default: tcp}}
contexts:
  - name: inputs
    host: 127.0.0.1
    control_port: 9510
    data_port: 9610
    applications:
      - {{type: ts_input, id: in0, builders: [tb0], eq_id: 7, count: {count}, pace: max,
         microslice_us: 100, timeslice_us: 1000, overlap_us: 200,
         input: {{kind: plugin, library: {source}, config: "size=1024"}}}}
      - {{type: ts_input, id: in1, builders: [tb0], eq_id: 8, count: {count}, pace: max,
         microslice_us: 100, timeslice_us: 1000, overlap_us: 200,
         input: {{kind: plugin, library: {source}, config: "size=512 seed=5"}}}}
  - name: builder
    host: 127.0.0.1
    control_port: 9511
    data_port: 9611
    applications:
      - {{type: ts_builder, id: tb0, inputs: [in0, in1], output: {{kind: file}}}}
"""

    def test_the_time_slice_builder_writes_every_microslice_its_plugin_made(self):
        count = 60
        config = rewrite_ports(self.TIMESLICE.format(data=self.path("data"), count=count,
                                                     source=self.lib("microslice_source")))
        code, out, summary = self.run_config(self.write_config("ts.yaml", config), "--duration",
                                             "0", timeout=180)
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["results"]["timeslices_complete"], count, summary["results"])
        # dump verifies every microslice's content against the CRC-32C the plugin computed.
        code, out = self.daqflow(["dump", self.path("data"), "--json", "--events"], timeout=120)
        self.assertEqual(code, 0, out[:3000])
        timeslices = [e for f in json.loads(out)["files"] for e in f["event_list"]]
        self.assertEqual(sorted(t["event"] for t in timeslices), list(range(count)))
        for t in timeslices:
            self.assertNotIn("problem", t)
            first_ns = t["event"] * 1_000_000
            self.assertEqual(t["start_ns"], first_ns)
            for c in t["components"]:
                size, seed = (1024, 1) if c["eq_id"] == 7 else (512, 5)
                sizes = microslice_sizes(c["eq_id"], first_ns, 12, 100_000, size, seed)
                self.assertEqual(c["microslices"], 12, t)
                self.assertEqual(c["content_size"], sum(sizes), t)
            self.assertEqual(sorted(c["eq_id"] for c in t["components"]), [7, 8])

    # -- an application type from a library -------------------------------------------------

    TICKER = """\
libraries: [{library}]
contexts:
  - name: ticking
    host: 127.0.0.1
    control_port: 9520
    applications:
      - {{type: ticker, id: tick1, rate_hz: 200, {extra}}}
"""

    def ticker_config(self, name, library=None, extra="fail_after: 0"):
        return self.write_config(name, rewrite_ports(self.TICKER.format(
            library=library or self.lib("daqflow_ticker"), extra=extra)))

    def test_an_application_type_from_a_library_is_checked_like_a_built_in_one(self):
        path = self.ticker_config("bad.yaml", extra="fail_after: 0, rate_hx: 5")
        code, out = self.daqflow(["check", path])
        self.assertNotEqual(code, 0, out)
        self.assertIn(f"{path}:7:", out)
        self.assertIn("unknown key 'rate_hx' in application 'tick1' of type 'ticker' (did you "
                      "mean 'rate_hz'?", out)
        path = self.ticker_config("range.yaml", extra="fail_after: -1")
        code, out = self.daqflow(["check", path])
        self.assertNotEqual(code, 0, out)
        self.assertIn("parameter 'fail_after' of application 'tick1'", out)

    def test_an_application_type_from_a_library_runs_publishes_and_fails_the_run(self):
        run, ports, _ = self.start_polled_run(open(self.ticker_config("tick.yaml")).read(),
                                              "ticking.yaml")
        port = ports["ticking"]

        def ticks():
            try:
                status, body = http(port, "GET", "/metrics")
            except OSError:
                return 0
            if status != 200:
                return 0
            for line in str(body).splitlines():
                if line.startswith("daqflow_ticks_total{") and 'application="tick1"' in line:
                    return float(line.split()[-1])
            return 0

        wait_until(lambda: ticks() >= 20, 60, "the ticker's metric on /metrics")
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))

        code, out, summary = self.run_config(self.ticker_config("fail.yaml",
                                                                extra="fail_after: 30"),
                                             "--duration", "60")
        self.assertNotEqual(code, 0, out)
        self.assertIn("tick1", summary["failure"])
        self.assertIn("failed after 30 ticks, as configured (fail_after)", summary["failure"])

    def test_a_library_built_with_pkg_config_loads_and_one_of_another_build_is_refused(self):
        source = os.path.join(SDK, "ticker.cpp")
        ours = self.path("libticker_pkgconfig.so")
        build(["c++", "-std=c++20", "-shared", "-fPIC", "-o", ours, source]
              + self.pkg_config("--cflags", "--libs"), self.dir, "the ticker with pkg-config")
        code, out = self.daqflow(["check", self.ticker_config("ours.yaml", library=ours)])
        self.assertEqual(code, 0, out)

        other = self.path("libticker_clang.so")
        build(["clang++", "-std=c++20", "-shared", "-fPIC", "-o", other, source]
              + self.pkg_config("--cflags", "--libs"), self.dir, "the ticker with clang++")
        code, out = self.daqflow(["check", self.ticker_config("other.yaml", library=other)])
        self.assertNotEqual(code, 0, out)
        self.assertIn(f"'{other}' was built against daqflow ", out)
        self.assertIn("clang", out)
        self.assertIn("rebuild the library against this daqflow's installation", out)

    # -- the installed headers ----------------------------------------------------------------

    def test_every_installed_header_compiles_alone_against_the_prefix(self):
        include = os.path.join(self.prefix, "include")
        headers = sorted(os.path.relpath(p, include)
                         for p in glob.glob(os.path.join(include, "daqflow", "**", "*.h*"),
                                            recursive=True))
        self.assertGreater(len(headers), 50)

        def compile_alone(header):
            done = subprocess.run(["c++", "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra",
                                   "-Werror", "-I", include, "-x", "c++", "-"],
                                  input=f"#include <{header}>\n".encode(), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=300)
            return header, done.returncode, done.stdout.decode(errors="replace")

        with ThreadPoolExecutor(max_workers=2) as pool:
            failed = [(h, out) for h, code, out in pool.map(compile_alone, headers) if code != 0]
        self.assertEqual(failed, [])


if __name__ == "__main__":
    unittest.main()
