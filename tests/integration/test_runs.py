"""The run registry: `daqflow run` takes each run's number there and records the run; `daqflow
runs` reads it back (docs/operations.md). On an SQLite file, and on a PostgreSQL server each test
class starts (postgres_server.py), each test with a database of its own."""

import itertools
import json
import os
import subprocess
import unittest

from cms_formats import crc32c, read_frd_file
from daqflow_testlib import DaqflowTestCase, read_example, rewrite_ports, set_param
from postgres_server import PostgresServer


def evb_config(number=None, files=True):
    """The one-process event builder, writing files (or not), with the given run.number or
    none."""
    text = rewrite_ports(read_example("local-inproc.yaml"))
    if files:
        text = text.replace("output: {kind: discard}", "output: {kind: file}")
    if number is not None:
        text = text.replace("run: {output:", f"run: {{number: {number}, output:", 1)
    return text


class RegistryChecks:
    """What every registry does, whatever the database (self.registry, in DAQFLOW_RUNS_DB)."""

    def files_of(self, number):
        paths = []
        for root, _, files in os.walk(self.path("run-data")):
            paths += [os.path.join(root, n) for n in files
                      if n.startswith(f"run{number:06d}_") and n.endswith(".dqf")]
        return sorted(paths)

    def runs(self, *args):
        code, out = self.daqflow(["runs"] + list(args))
        self.assertEqual(code, 0, out)
        return out

    def test_each_run_gets_the_next_number_and_the_registry_keeps_it(self):
        text = evb_config()
        config = self.write_config("evb.yaml", text)
        numbers = []
        for i in range(2):
            code, out, summary = self.run_config(config, "--duration", "1", logs=f"logs{i}")
            self.assertEqual(code, 0, out)
            numbers.append(summary["run_number"])
            self.assertIn(f"run {summary['run_number']} (run registry {self.registry})", out)
        self.assertEqual(numbers, [1, 2])
        for n in numbers:
            self.assertTrue(self.files_of(n), f"no file of run {n} in run-data")
            with open(self.files_of(n)[0], "rb") as f:
                self.assertEqual(f.read(4), b"DQF1", "an event file")

        listed = json.loads(self.runs("list", "--json"))
        self.assertEqual([r["number"] for r in listed], [2, 1], listed)
        for r in listed:
            self.assertEqual(r["state"], "ended", r)
            self.assertEqual(r["config_name"], "evb", r)
            self.assertEqual(r["config_path"], config, r)
            self.assertIsNotNone(r["stopped_ms"], r)

        self.runs("comment", "1", "a quiet fill")
        shown = json.loads(self.runs("show", "1", "--json"))
        # Each application's part in each transition, as the summary has it too.
        apps = ["evm0", "ru1", "ru2", "ru3", "bu1", "bu2"]
        for name in ("configure", "enable", "halt"):
            parts = [t for t in shown["transitions"] if t["transition"] == name]
            self.assertEqual(sorted(t["application"] for t in parts), sorted(apps), parts)
            for t in parts:
                self.assertEqual(t["outcome"], "ok", t)
                self.assertGreaterEqual(t["duration_ms"], 0, t)
        self.assertEqual(shown["transitions"], shown["summary"]["transitions"])
        self.assertEqual(shown["config_text"], text)
        self.assertEqual(shown["summary"]["run_number"], 1)
        self.assertEqual(shown["summary"]["status"], "ok")
        self.assertIn("daqflow 0.1.0", shown["version"])
        self.assertEqual([c["text"] for c in shown["comments"]], ["a quiet fill"])
        # Every file the run wrote, as it is on disk, with the application that wrote it.
        on_disk = self.files_of(1)
        self.assertEqual(sorted(f["path"] for f in shown["files"]), on_disk)
        for f in shown["files"]:
            self.assertEqual(f["bytes"], os.path.getsize(f["path"]), f)
            self.assertEqual(f["host"], "127.0.0.1", f)
            self.assertIn(f["application"], ("bu1", "bu2"), f)
            with open(f["path"][:-len(".dqf")] + ".json") as sidecar:
                written = json.load(sidecar)
            self.assertEqual(f["checksum"], "crc32c:" + written["checksum"]["value"], f)
            self.assertEqual(f["events"], written["events"], f)
        self.assertEqual(sum(f["events"] for f in shown["files"]),
                         shown["summary"]["results"]["events_written"])
        human = self.runs("show", "1")
        self.assertIn("run 1: ended", human)
        self.assertIn("a quiet fill", human)

        # The configuration back, without its number: daqflow run takes it, under the next one.
        again = self.write_config("again.yaml", self.runs("show", "2", "--config"))
        code, out, summary = self.run_config(again, "--duration", "1", logs="logs-again")
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["run_number"], 3)
        self.assertTrue(self.files_of(3))

    def test_frd_runs_carry_their_numbers_and_the_registry_their_files_checksums(self):
        """CMS's FRD output: each run's directory, file names and event headers carry the
        registry's number; the registry has every raw file, its size and the CRC-32C of its
        bytes, checked here by an independent reader."""
        text = set_param(set_param(evb_config(files=False), "mean", 256), "sd", 128)
        text = text.replace("output: {kind: discard}", "output: {kind: frd, events_per_file: 20}")
        text = text.replace("bus: [bu1, bu2]", "bus: [bu1, bu2]\n        trigger_rate_hz: 2000", 1)
        config = self.write_config("frd.yaml", text)
        for number in (1, 2):
            code, out, summary = self.run_config(config, "--duration", "1", logs=f"logs{number}")
            self.assertEqual(code, 0, out)
            self.assertEqual(summary["run_number"], number)
            shown = json.loads(self.runs("show", str(number), "--json"))
            raw = [f for f in shown["files"] if f["path"].endswith(".raw")]
            self.assertTrue(raw, shown["files"])
            self.assertEqual(sum(f["events"] for f in raw), summary["results"]["events_built"])
            for f in raw:
                self.assertIn(f"/run{number:06d}/run{number:06d}_ls", f["path"])
                self.assertEqual(f["bytes"], os.path.getsize(f["path"]), f)
            for f in raw[:4]:
                with open(f["path"], "rb") as data:
                    self.assertEqual(f["checksum"], f"crc32c:{crc32c(data.read()):08x}", f)
                self.assertEqual({e[0] for e in read_frd_file(f["path"])["events"]}, {number})

    def test_two_controllers_at_the_same_moment_get_distinct_numbers(self):
        procs = []
        for name in ("a", "b"):
            config = self.write_config(f"{name}.yaml", evb_config())
            procs.append((self.start(["run", config, "--duration", "1", "--summary",
                                      self.path(f"{name}.json"), "--log-dir",
                                      self.path(f"logs-{name}")], f"run-{name}.log"), name))
        numbers = set()
        for proc, name in procs:
            try:
                code = proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.fail(f"run {name} did not end within 120 s")
            self.assertEqual(code, 0, self.output_of(f"run-{name}.log"))
            with open(self.path(f"{name}.json")) as f:
                numbers.add(json.load(f)["run_number"])
        self.assertEqual(numbers, {1, 2})


class SqliteRegistry(RegistryChecks, DaqflowTestCase):
    """The default: an SQLite file (each test's own, as DaqflowTestCase sets it)."""

    def test_a_number_run_before_is_refused_unless_reused_on_purpose(self):
        # (No files: the second run of a number would find the first's, which a file output
        # refuses to write beside.)
        config = self.write_config("evb7.yaml", evb_config(number=7, files=False))
        code, out, summary = self.run_config(config, "--duration", "1", logs="logs0")
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["run_number"], 7)
        code, out, summary = self.run_config(config, "--duration", "1", logs="logs1")
        self.assertNotEqual(code, 0, out)
        self.assertIn("run 7 was run before", out)
        self.assertIsNone(summary, "a refused run starts nothing")
        self.assertFalse(os.path.exists(self.path("logs1")), "a refused run starts nothing")
        code, out, summary = self.run_config(config, "--duration", "1", "--reuse-run-number",
                                             logs="logs2")
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["run_number"], 7)
        # Its configuration back comes without the number: the next run is the registry's 8.
        text = self.runs("show", "7", "--config")
        self.assertNotIn("number", text)
        again = self.write_config("again.yaml", text)
        code, out, summary = self.run_config(again, "--duration", "1", logs="logs3")
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["run_number"], 8)

    def test_a_registry_out_of_reach_stops_the_run_before_anything_starts(self):
        config = self.write_config("evb.yaml", evb_config())
        blocker = self.path("not-a-folder")
        with open(blocker, "w") as f:
            f.write("x")
        os.environ["DAQFLOW_RUNS_DB"] = os.path.join(blocker, "runs.sqlite")
        code, out, summary = self.run_config(config, "--duration", "1")
        self.assertNotEqual(code, 0, out)
        self.assertIn("run registry", out)
        self.assertIn(blocker, out)
        self.assertIsNone(summary)
        self.assertFalse(os.path.exists(self.path("logs")), "a run without a number starts nothing")
        self.assertFalse(os.path.exists(self.path("run-data")))


class PostgresRegistry(RegistryChecks, DaqflowTestCase):
    """A PostgreSQL server, named by a postgresql:// URI."""

    _databases = itertools.count()

    @classmethod
    def setUpClass(cls):
        cls.server = PostgresServer()
        cls.server.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def setUp(self):
        super().setUp()
        self.registry = self.server.create_database(f"runs{next(self._databases)}")
        os.environ["DAQFLOW_RUNS_DB"] = self.registry

    def test_the_configuration_names_the_server(self):
        os.environ["DAQFLOW_RUNS_DB"] = self.path("not-this-one.sqlite")
        text = evb_config(files=False).replace(
            "run: {output:", f"run: {{registry: '{self.registry}', output:", 1)
        config = self.write_config("evb.yaml", text)
        code, out, summary = self.run_config(config, "--duration", "1")
        self.assertEqual(code, 0, out)
        self.assertIn(f"run 1 (run registry {self.registry})", out)
        self.assertFalse(os.path.exists(self.path("not-this-one.sqlite")))
        shown = json.loads(self.runs("--registry", self.registry, "show", "1", "--json"))
        self.assertEqual(shown["state"], "ended", shown)

    def test_a_server_that_does_not_answer_stops_the_run_before_anything_starts(self):
        config = self.write_config("evb.yaml", evb_config())
        gone = self.registry.replace(f":{self.server.port}/", ":1/")
        os.environ["DAQFLOW_RUNS_DB"] = gone
        code, out, summary = self.run_config(config, "--duration", "1")
        self.assertNotEqual(code, 0, out)
        self.assertIn(f"cannot reach the run registry {gone}", out)
        self.assertIsNone(summary)
        self.assertFalse(os.path.exists(self.path("logs")), "a run without a number starts nothing")



def with_hooks(text, hooks):
    """The configuration with a `hooks` section (a mapping of YAML lines) before `contexts`."""
    lines = "".join(f"  {key}: {value}\n" for key, value in hooks.items())
    return text.replace("contexts:", "hooks:\n" + lines + "contexts:", 1)


class TransitionsAndHooks(DaqflowTestCase):
    """Each transition's report, application by application, and the hooks around them."""

    def shown(self, number):
        code, out = self.daqflow(["runs", "show", str(number), "--json"])
        self.assertEqual(code, 0, out)
        return json.loads(out)

    def test_hooks_run_around_each_transition_with_the_run_in_their_environment(self):
        line = "echo $DAQFLOW_HOOK $DAQFLOW_TRANSITION $DAQFLOW_RUN_NUMBER $DAQFLOW_RUN_STATUS"
        hooks = {f"{when}_{t}": f"'{line} >> hooks.txt'"
                 for t in ("configure", "enable", "halt") for when in ("before", "after")}
        # A failing hook after a transition is reported; the run goes on.
        hooks["after_enable"] = f"['{line} >> hooks.txt', 'echo logbook down; exit 1']"
        config = self.write_config("evb.yaml", with_hooks(evb_config(files=False), hooks))
        code, out, summary = self.run_config(config, "--duration", "1")
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", out)
        number = summary["run_number"]
        # In the configuration's folder, in order, with the run's number.
        with open(self.path("hooks.txt")) as f:
            self.assertEqual(f.read().splitlines(), [
                f"{when} {t} {number} ok"
                for t in ("configure", "enable", "halt") for when in ("before", "after")])
        self.assertIn("enable after: echo logbook down; exit 1: failed", out)
        self.assertIn("exited with code 1: logbook down", out)
        hooked = [t for t in self.shown(number)["transitions"] if ": " in t["application"]]
        self.assertEqual([(t["transition"], t["application"].split(":")[0], t["outcome"])
                          for t in hooked], [
            ("configure", "before", "ok"), ("configure", "after", "ok"),
            ("enable", "before", "ok"), ("enable", "after", "ok"), ("enable", "after", "failed"),
            ("halt", "before", "ok"), ("halt", "after", "ok")])

    def test_a_failing_hook_before_configure_stops_the_run_with_its_message(self):
        hooks = {"before_configure": "'echo no beam permit >&2; exit 3'"}
        config = self.write_config("evb.yaml", with_hooks(evb_config(files=False), hooks))
        code, out, summary = self.run_config(config, "--duration", "1")
        self.assertNotEqual(code, 0, out)
        failure = summary["failure"]
        self.assertIn("the hook before configure failed", failure)
        self.assertIn("exited with code 3: no beam permit", failure)
        self.assertNotIn("configuring", out, "no application is asked to configure")
        shown = self.shown(summary["run_number"])
        self.assertEqual(shown["state"], "failed")
        self.assertEqual([(t["application"], t["outcome"]) for t in shown["transitions"]],
                         [("before: echo no beam permit >&2; exit 3", "failed")])
        for app in summary["applications"].values():
            self.assertEqual(app["state"], "Halted", app)

    def test_an_executive_frozen_before_configure_is_named_as_not_answering(self):
        # The hook freezes ru2's executive (SIGSTOP) just before Configure is sent.
        freeze = "pkill -STOP -f -- \"exec $DAQFLOW_CONFIG .*--context ru2( |$)\""
        text = with_hooks(rewrite_ports(read_example("local.yaml")),
                          {"before_configure": f"'{freeze}'"})
        config = self.write_config("local.yaml", text)
        code, out, summary = self.run_config(config, "--duration", "1", timeout=240)
        self.assertNotEqual(code, 0, out)
        configure = [t for t in self.shown(summary["run_number"])["transitions"]
                     if t["transition"] == "configure" and ": " not in t["application"]]
        by_app = {t["application"]: t for t in configure}
        self.assertEqual(set(by_app), {"evm0", "ru1", "ru2", "ru3", "bu1", "bu2"}, configure)
        frozen = by_app["ru2"]
        self.assertIn(frozen["outcome"], ("no answer", "lost"), frozen)
        self.assertIn("ru2", frozen["reason"])
        self.assertIn("ru2", out)
        self.assertRegex(out, r"configure ru2: (no answer|lost)")
        for app, t in by_app.items():
            if app != "ru2":
                self.assertNotIn(t["outcome"], ("no answer", "lost"), t)


if __name__ == "__main__":
    unittest.main()
