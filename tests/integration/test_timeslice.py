"""Time-slice building with real processes (docs/timeslices.md): four ts_inputs in two processes
and four ts_builders, one per process. Over tcp, shm and ucx, chaotic and scheduled, every
timeslice of a run is built once, complete and verified by `daqflow dump` (descriptors in order,
CRC-32C of every microslice, the overlap equal to the next timeslice's first microslices); a
builder process SIGKILLed mid-run loses no timeslice (the inputs send what it had not
acknowledged to the others); an input process killed makes timeslices flagged incomplete naming
its inputs."""

import json
import os
import re
import signal
import time
import unittest

from daqflow_testlib import (PORTS, DaqflowTestCase, http, read_example, rewrite_ports,
                             wait_until)

INPUTS = {"ia": ["in0", "in1"], "ib": ["in2", "in3"]}
ALL_INPUTS = [i for ids in INPUTS.values() for i in ids]
BUILDERS = ["tb0", "tb1", "tb2", "tb3"]


LARGE = "{dist: uniform, mean: 2048, sd: 1000, max: 4096}"  # contributions of about 48 kB
SMALL = "{dist: uniform, mean: 256, sd: 100, max: 512}"  # of 7 to 13 kB: several to a message


def ts_config(transport="tcp", inputs="", builders="", output="{kind: file}", manager=None,
              sizes=LARGE):
    """Inputs two per process, builders one per process; extra flow-style keys for each. With
    manager (its extra keys, or ""), a ts_manager in a process of its own assigns."""
    # A builder's timeout writes a timeslice without the part of an input it still waits for:
    # in a test, a race with the host's scheduling (a process held up past it leaves a gap in
    # its input's timeslices). The builders learn of an input that ends or dies from its link,
    # so the tests give them a timeout no held-up process reaches.
    if "timeout_ms" not in builders:
        builders = "timeout_ms: 60000" + (", " + builders if builders else "")
    # Likewise an input's wait for the builders' answer to the inputs' vote on the run's end.
    if "end_wait_ms" not in inputs:
        inputs = "end_wait_ms: 60000" + (", " + inputs if inputs else "")
    text = (f"run: {{output: ./run-data}}\n"
            f"transports: {{default: {transport}, pipeline_depth: 8, "
            f"max_message_size: 1048576}}\n"
            f"contexts:\n")
    port = 1
    if manager is not None:
        text += (f"  - name: mgr\n    host: 127.0.0.1\n    control_port: {port}\n"
                 f"    data_port: {port + 1}\n    applications:\n"
                 f"      - {{type: ts_manager, id: tm, builders: [{', '.join(BUILDERS)}], "
                 f"inputs: [{', '.join(ALL_INPUTS)}]{', ' + manager if manager else ''}}}\n")
        port += 2
        inputs = "manager: tm" + (", " + inputs if inputs else "")
        builders = "manager: tm" + (", " + builders if builders else "")
    for ctx, ids in INPUTS.items():
        text += (f"  - name: {ctx}\n    host: 127.0.0.1\n    control_port: {port}\n"
                 f"    data_port: {port + 1}\n    applications:\n")
        port += 2
        for i in ids:
            text += (f"      - {{type: ts_input, id: {i}, builders: [{', '.join(BUILDERS)}], "
                     f"microslice_us: 100, timeslice_us: 2000, overlap_us: 300, "
                     f"microslice_size: {sizes}, "
                     f"seed: {i[2:]}{', ' + inputs if inputs else ''}}}\n")
    for b in BUILDERS:
        text += (f"  - name: ctx_{b}\n    host: 127.0.0.1\n    control_port: {port}\n"
                 f"    data_port: {port + 1}\n    applications:\n"
                 f"      - {{type: ts_builder, id: {b}, inputs: [{', '.join(ALL_INPUTS)}], "
                 f"output: {output}{', ' + builders if builders else ''}}}\n")
        port += 2
    return rewrite_ports(text)


def control_port(text, ctx):
    return int(re.search(rf"^  - name: {ctx}\n(?:    .*\n)*?    control_port: (\d+)", text,
                         flags=re.M).group(1))


class Timeslices(DaqflowTestCase):
    def dump(self):
        code, out = self.daqflow(["dump", self.path("run-data"), "--json", "--events"],
                                 timeout=120)
        report = json.loads(out) if out.lstrip().startswith("{") else None
        self.assertIsNotNone(report, out[:3000])
        self.assertEqual(code, 0, out[:3000])
        self.assertTrue(report["all_verified"], out[:3000])
        self.assertTrue(all(f["content"] == "timeslices" for f in report["files"]))
        return [e for f in report["files"] for e in f["event_list"]]

    def assert_built_once(self, timeslices, count):
        """Every timeslice 0..count-1 on disk once, with every input's component; each overlap
        equals the next timeslice's first microslices of the same input."""
        numbers = sorted(t["event"] for t in timeslices)
        self.assertEqual(numbers, list(range(count)), "every timeslice once")
        by_index = {t["event"]: t for t in timeslices}
        for t in timeslices:
            self.assertEqual(t["flags"], 0, t["event"])
            self.assertEqual(t["components_expected"], 4)
            self.assertEqual(sorted(c["eq_id"] for c in t["components"]), [0, 1, 2, 3])
            for c in t["components"]:
                self.assertEqual(c["microslices"], 23)  # 20 core + 3 overlap
                self.assertEqual(len(c["overlap"]), 3)
                self.assertEqual(c["first"][0][0], t["start_ns"])
            after = by_index.get(t["event"] + 1)
            if after is None:
                continue
            first = {c["eq_id"]: c["first"] for c in after["components"]}
            for c in t["components"]:
                self.assertEqual(c["overlap"], first[c["eq_id"]],
                                 f"timeslice {t['event']}, eq_id {c['eq_id']}: the overlap is "
                                 "the next timeslice's first microslices")

    def clean_run(self, transport, order, manager=None, sizes=LARGE, slot_us=None):
        extra = f"pace: max, count: 200, order: {order}"
        if slot_us is not None:
            extra += f", slot_us: {slot_us}"
        text = ts_config(transport, inputs=extra, manager=manager, sizes=sizes)
        code, out, summary = self.run_config(self.write_config("ts.yaml", text), "--duration",
                                             "0", timeout=180)
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        results = summary["results"]
        self.assertEqual(results["timeslices_complete"], 200, results)
        self.assertEqual(results["timeslices_written"], 200, results)
        self.assertEqual(results["timeslices_incomplete"], 0, results)
        self.assertEqual(results["contributions_rejected"], 0, results)
        apps = summary["applications"]
        for ids in INPUTS.values():
            for i in ids:
                r = apps[i]["results"]
                self.assertEqual(r["timeslices_acked"], 200, (i, r))
                self.assertEqual(r["timeslices_sent"], 200, (i, r))
                self.assertEqual(r["contributions_resent"], 0, (i, r))
        for b in BUILDERS:
            # Scheduled in turns: every input sent to the builder in turns it gave.
            turns = apps[b]["results"]["turns_given"]
            if order == "scheduled" and slot_us is None:
                self.assertGreaterEqual(turns, sum(len(ids) for ids in INPUTS.values()), b)
            else:
                self.assertEqual(turns, 0, b)
            # Contributions and, in turns, the inputs' requests and hand-backs; without a
            # manager, each input's vote on where the run ends and its word that it ended.
            votes = apps[b]["results"]["end_votes"]
            ended = apps[b]["results"]["inputs_said_ended"]
            self.assertEqual(votes, 0 if manager is not None else len(ALL_INPUTS), b)
            self.assertEqual(ended, 0 if manager is not None else len(ALL_INPUTS), b)
            messages = (apps[b]["endpoint"]["messages_received"] -
                        apps[b]["results"]["turn_messages"] - votes - ended)
            contributions = apps[b]["results"]["contributions"]
            if sizes == SMALL:
                # Small contributions travel several to a message.
                self.assertLess(messages, contributions, b)
            elif manager is None:
                self.assertEqual(messages, contributions, b)
        if manager is None:
            for b in BUILDERS:
                # Round robin: timeslice k to builder k mod 4.
                self.assertEqual(apps[b]["results"]["timeslices_written"], 50, b)
        else:
            tm = apps["tm"]["results"]
            self.assertEqual(tm["timeslices_done"], 200, tm)
            self.assertEqual(tm["commits_granted"], 200, tm)
            self.assertEqual(tm["commits_denied"], 0, tm)
            self.assertEqual(tm["timeslices_reassigned"], 0, tm)
            written = [apps[b]["results"]["timeslices_written"] for b in BUILDERS]
            self.assertEqual(sum(written), 200, written)
            print(f"\n{transport}: manager: timeslices per builder {written}", flush=True)
        self.assert_built_once(self.dump(), 200)

    def test_every_timeslice_built_once_over_tcp_shm_and_ucx(self):
        for transport in ("tcp", "shm", "ucx"):
            with self.subTest(transport=transport):
                self.clean_run(transport, "chaotic")
                os.rename(self.path("run-data"), self.path(f"run-data-{transport}"))

    def test_scheduled_order_builds_every_timeslice_once(self):
        """In the builders' turns over tcp and shm, and in fixed slots on the clock over shm."""
        for transport, slot_us in (("tcp", None), ("shm", None), ("shm", 200)):
            with self.subTest(transport=transport, slot_us=slot_us):
                self.clean_run(transport, "scheduled", slot_us=slot_us)
                os.rename(self.path("run-data"), self.path(f"run-data-{transport}-{slot_us}"))

    def test_small_contributions_go_several_to_a_message_each_built_once(self):
        for transport, order in (("tcp", "chaotic"), ("shm", "scheduled")):
            with self.subTest(transport=transport, order=order):
                self.clean_run(transport, order, sizes=SMALL)
                os.rename(self.path("run-data"), self.path(f"run-data-{transport}"))

    def test_a_manager_assigns_every_timeslice_once(self):
        for transport in ("tcp", "shm"):
            with self.subTest(transport=transport):
                self.clean_run(transport, "chaotic", manager="")
                os.rename(self.path("run-data"), self.path(f"run-data-{transport}"))

    def test_a_managers_answers_held_up_on_their_link_are_kept_not_dropped(self):
        """Every message of the manager to tb1 leaves 300 ms late, and a peer's pipeline holds
        2: tb1's commit answers wait for room on their link. None is lost, and every timeslice
        is written once. (An answer the link had no room for was dropped: tb1 does not ask
        twice, so its timeslice stayed open at the manager, and the run did not end.)"""
        extra = "pace: max, count: 200, order: chaotic"
        text = ts_config("tcp", inputs=extra, manager="").replace("pipeline_depth: 8",
                                                                  "pipeline_depth: 2")
        text += "faults:\n  - {from: tm, to: tb1, delay_ms: 300}\n"
        code, out, summary = self.run_config(self.write_config("ts.yaml", text), "--duration",
                                             "0", timeout=180)
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        results = summary["results"]
        self.assertEqual(results["timeslices_written"], 200, results)
        self.assertEqual(results["timeslices_incomplete"], 0, results)
        tm = summary["applications"]["tm"]["results"]
        self.assertEqual(tm["commits_granted"], 200, tm)
        self.assertEqual(tm["timeslices_done"], 200, tm)
        tb1 = summary["applications"]["tb1"]["results"]["timeslices_written"]
        self.assertGreater(tb1, 0)
        self.assert_built_once(self.dump(), 200)
        print(f"\nthe manager's messages to tb1 300 ms late: tb1 wrote {tb1} timeslices",
              flush=True)

    def test_assignments_by_multicast_survive_dropped_datagrams(self):
        """The manager's assignments and the run's end go by UDP multicast; every input drops
        20% of the datagrams (fault injection): each asks for what it misses and gets it back,
        and every timeslice is built once."""
        port = PORTS.take(1)
        group = f"239.255.{(port >> 8) & 255}.{port & 255}"
        text = ts_config("tcp", inputs="pace: max, count: 200, multicast_drop: 0.2",
                         manager=f"multicast: {{group: {group}, port: {port}}}")
        code, out, summary = self.run_config(self.write_config("ts.yaml", text), "--duration",
                                             "0", timeout=180)
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        apps = summary["applications"]
        tm = apps["tm"]["results"]
        self.assertEqual(tm["timeslices_done"], 200, tm)
        self.assertEqual(tm["commits_granted"], 200, tm)
        cast = tm["multicast"]
        self.assertGreater(cast["sent"], 0, cast)
        self.assertGreater(cast["nacks_received"], 0, cast)
        self.assertGreater(cast["repairs_sent"], 0, cast)
        self.assertEqual(cast["repairs_unavailable"], 0, cast)
        heard_by = {}
        for ids in INPUTS.values():
            for i in ids:
                r = apps[i]["results"]
                heard = heard_by[i] = r["multicast"]
                self.assertEqual(heard["recovered"], heard["lost_before_retry"], (i, heard))
                self.assertEqual(heard["lost_after_retry"], 0, (i, heard))
                self.assertEqual(r["timeslices_acked"], 200, (i, r))
                self.assertEqual(r["messages_malformed"], 0, (i, r))
        # An input hears a few dozen datagrams (assignments go several to one): one may by chance
        # lose none of them (0.8^20, about 1%), all of them together cannot.
        for key in ("dropped_injected", "lost_before_retry"):
            self.assertGreater(sum(h[key] for h in heard_by.values()), 0, (key, heard_by))
        print(f"\nmulticast assignments: manager {cast}; in0 {apps['in0']['results']['multicast']}",
              flush=True)
        self.assert_built_once(self.dump(), 200)

    def manager_results(self, port):
        try:
            status, body = http(port, "GET", "/api/v1/apps/tm")
            return body["results"] if status == 200 else {}
        except OSError:
            return {}

    def assert_contiguous_once(self, timeslices, summary):
        """Each timeslice of the run on disk once and complete, none skipped: the manager (or,
        without one, the inputs' vote) says where the run ends, and the inputs make every
        timeslice up to there."""
        numbers = sorted(t["event"] for t in timeslices)
        self.assertEqual(numbers, list(range(len(numbers))), "every timeslice once")
        flagged = [t["event"] for t in timeslices if t["flags"] != 0]
        self.assertEqual(flagged, [], "no timeslice incomplete")
        if "tm" not in summary["applications"]:
            self.assertEqual(summary["results"]["timeslices_written"], len(numbers))
            return
        tm = summary["applications"]["tm"]["results"]
        self.assertEqual(tm["timeslices_done"], len(numbers), tm)
        self.assertEqual(tm["timeslices_in_flight"], 0, tm)

    def test_a_frozen_builder_is_fenced_and_nothing_is_written_twice(self):
        """SIGSTOP of tb1's process past the manager's heartbeat timeout, then SIGCONT: the
        manager gives tb1's timeslices to the others; tb1 wakes, is fenced, drops what it held,
        is denied what it asks to write, rejoins and builds again."""
        text = ts_config("tcp", inputs="pace: max", manager="heartbeat_timeout_ms: 1000")
        run = self.start_run(text)
        mgr = control_port(text, "mgr")
        wait_until(lambda: self.manager_results(mgr).get("timeslices_done", 0) >= 1000, 60,
                   "1000 timeslices written")
        status, ctx = http(control_port(text, "ctx_tb1"), "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGSTOP)
        try:
            wait_until(lambda: self.manager_results(mgr).get("lost_builders") == ["tb1"], 30,
                       "the manager to declare the frozen tb1 lost")
            at_loss = self.manager_results(mgr)["timeslices_done"]
            wait_until(lambda: self.manager_results(mgr)["timeslices_done"] >= at_loss + 1000,
                       60, "1000 more timeslices written by the others")
        finally:
            os.kill(ctx["pid"], signal.SIGCONT)
        wait_until(lambda: self.manager_results(mgr).get("rejoined_builders") == ["tb1"], 30,
                   "tb1 to rejoin")
        tb1 = control_port(text, "ctx_tb1")

        def written_by_tb1():
            status, body = http(tb1, "GET", "/api/v1/apps/tb1")
            return body["results"]["timeslices_written"]
        before = written_by_tb1()
        wait_until(lambda: written_by_tb1() >= before + 100, 60, "tb1 to build again")
        summary = self.finish(run)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        tm = summary["applications"]["tm"]["results"]
        self.assertEqual(tm["timeslices_in_doubt"], 0, tm)
        r = summary["applications"]["tb1"]["results"]
        print(f"\ntcp: froze tb1: {tm['timeslices_reassigned']} reassigned, tb1 fenced "
              f"{r['fences']}, dropped {r['contributions_fenced']} contributions, denied "
              f"{r['commits_denied']}", flush=True)
        self.assertEqual(r["fences"], 1, r)
        self.assert_contiguous_once(self.dump(), summary)

    def test_a_halted_run_without_a_manager_ends_where_the_furthest_input_stood(self):
        """Halted mid-run (inputs as fast as the builders take timeslices, no count), the inputs
        of a round robin without a manager stand a few timeslices apart: they tell the builders
        how far they are, make their timeslices up to the furthest, and every timeslice of the
        run is on disk once and complete. (Those between the first input's stop and the last
        one's were written incomplete.)"""
        text = ts_config("tcp", inputs="pace: max")
        run = self.start_run(text)
        ia = control_port(text, "ia")
        wait_until(lambda: self.acked(ia, "in0") >= 1000, 60, "1000 timeslices acknowledged")
        summary = self.finish(run)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        self.assertEqual(summary["results"]["timeslices_incomplete"], 0, summary["results"])
        agreed = re.findall(r"(in\d): the inputs agree that the run ends before timeslice (\d+) "
                            r"\((\d+) to make", self.logs_said())
        self.assertEqual(sorted(i for i, _, _ in agreed), ALL_INPUTS, agreed)
        self.assertEqual(len({end for _, end, _ in agreed}), 1, agreed)
        print(f"\ntcp: halted without a manager: the inputs made {[int(n) for _, _, n in agreed]} "
              f"more timeslice(s) to the end at {agreed[0][1]}", flush=True)
        timeslices = self.dump()
        self.assert_contiguous_once(timeslices, summary)
        self.assertEqual(len(timeslices), int(agreed[0][1]))

    def test_a_killed_builder_with_a_manager_is_salvaged_started_again_and_rejoins(self):
        """SIGKILL of tb1's process while it writes: the manager gives what tb1 was not allowed
        to write yet to the others; the controller salvages tb1's files, and the timeslices tb1
        was allowed to write are decided by what is on its disk. tb1's context has restart:
        on-failure: it comes back, rejoins, and the manager assigns to it again."""
        text = ts_config("tcp", inputs="pace: max", manager="heartbeat_timeout_ms: 1000")
        text = text.replace("  - name: ctx_tb1\n",
                            "  - name: ctx_tb1\n    restart: {policy: on-failure, backoff_ms: 200}\n",
                            1)
        run = self.start_run(text)
        mgr = control_port(text, "mgr")
        wait_until(lambda: self.manager_results(mgr).get("timeslices_done", 0) >= 1000, 60,
                   "1000 timeslices written")
        status, ctx = http(control_port(text, "ctx_tb1"), "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)
        wait_until(lambda: self.manager_results(mgr).get("lost_builders") == ["tb1"], 30,
                   "the manager to lose tb1")
        wait_until(lambda: self.manager_results(mgr).get("timeslices_in_doubt", 1) == 0, 60,
                   "the salvage of tb1's files to settle what it was writing")
        self.wait_for_restart("ctx_tb1")
        wait_until(lambda: self.manager_results(mgr).get("rejoined_builders") == ["tb1"], 60,
                   "the manager to take tb1 back")
        tb1 = control_port(text, "ctx_tb1")
        wait_until(lambda: self.written(tb1, "tb1") >= 100, 60,
                   "the restarted tb1 to write 100 timeslices")
        at_rejoin = self.manager_results(mgr)["timeslices_done"]
        wait_until(lambda: self.manager_results(mgr)["timeslices_done"] >= at_rejoin + 1000, 60,
                   "1000 more timeslices written")
        summary = self.finish(run)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        tm = summary["applications"]["tm"]["results"]
        print(f"\ntcp: killed tb1: {tm['timeslices_reassigned']} reassigned, "
              f"{tm['timeslices_salvaged']} found on its disk; tb1 started again, "
              f"{summary['applications']['tb1']['results'].get('timeslices_written')} written "
              f"after", flush=True)
        self.assertEqual(len(summary["restarted"]), 1, summary["restarted"])
        self.assert_contiguous_once(self.dump(), summary)

    def kill_tb1_and_salvage(self, text):
        """Starts the run, kills tb1's process once it wrote 10 timeslices and waits for the
        manager to lose it and for the salvage of its files; returns (run, manager's port)."""
        run = self.start_run(text)
        mgr = control_port(text, "mgr")
        tb1 = control_port(text, "ctx_tb1")
        wait_until(lambda: self.written(tb1, "tb1") >= 10, 60, "tb1 to write 10 timeslices")
        self.kill_context(tb1)
        wait_until(lambda: self.manager_results(mgr).get("lost_builders") == ["tb1"], 30,
                   "the manager to lose tb1")
        wait_until(lambda: self.manager_results(mgr).get("timeslices_in_doubt", 1) == 0, 60,
                   "the salvage of tb1's files to settle what it was writing")
        return run, mgr

    def test_salvaged_timeslices_are_acknowledged_to_an_input_whose_link_is_full(self):
        """tb1's messages to the manager and to in0 leave 300 ms late: when tb1's process is
        killed, neither has heard of its last writes. The salvage of tb1's files finds them on
        its disk, and the manager acknowledges them to the inputs. Its own messages to in0 leave
        300 ms late too, which keeps that link's pipeline full of assignments: the
        acknowledgements wait for room behind them (one dropped kept its timeslice at in0 for
        good: in0 never drained, and the Halt timed out)."""
        text = ts_config("tcp", inputs="pace: max", manager="heartbeat_timeout_ms: 5000")
        text += ("faults:\n  - {from: tb1, to: tm, delay_ms: 300}\n"
                 "  - {from: tb1, to: in0, delay_ms: 300}\n"
                 "  - {from: tm, to: in0, delay_ms: 300}\n")
        run, mgr = self.kill_tb1_and_salvage(text)
        at_salvage = self.manager_results(mgr)["timeslices_done"]
        wait_until(lambda: self.manager_results(mgr)["timeslices_done"] >= at_salvage + 50, 60,
                   "50 more timeslices written")
        summary = self.finish(run)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        tm = summary["applications"]["tm"]["results"]
        print(f"\ntcp: killed tb1: {tm['timeslices_salvaged']} found on its disk and "
              f"acknowledged to the inputs, {tm['timeslices_reassigned']} reassigned", flush=True)
        self.assertGreater(tm["timeslices_salvaged"], 0, tm)
        self.assert_contiguous_once(self.dump(), summary)

    def test_salvage_acknowledgements_go_again_to_an_input_whose_link_to_the_manager_was_reset(
            self):
        """tb1's messages to the manager leave 300 ms late, so that its last writes are found
        by the salvage of its files once its process is killed; the manager acknowledges them to
        the inputs. 20 s into the run the manager's link to in0 is reset: once it is back, the
        manager tells in0 every one of those acknowledgements again with its open assignments
        (one lost with the link kept its timeslice at in0 for good: in0 never drained), in0
        ignores those it had, and every timeslice is on disk once."""
        text = ts_config("tcp", inputs="pace: max", manager="heartbeat_timeout_ms: 1000")
        text += ("faults:\n  - {from: tb1, to: tm, delay_ms: 300}\n"
                 "  - {from: tm, to: in0, reset: true, after_ms: 20000}\n")
        run, mgr = self.kill_tb1_and_salvage(text)
        self.assertNotIn("the link to input 'in0' failed", self.logs_said(),
                         "the reset came before the salvage: the host held the run up for 20 s")
        back = re.compile(r"tm: the link to input 'in0' is back; \d+ assignment\(s\) and "
                          r"(\d+) salvage acknowledgement\(s\) go to it again")
        wait_until(lambda: back.search(self.logs_said()), 60, "the link from tm to in0 back")
        at_back = self.manager_results(mgr)["timeslices_done"]
        wait_until(lambda: self.manager_results(mgr)["timeslices_done"] >= at_back + 50, 60,
                   "50 more timeslices written")
        summary = self.finish(run)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        tm = summary["applications"]["tm"]["results"]
        told_again = int(back.search(self.logs_said()).group(1))
        # The manager also acknowledges the last timeslices tb1 reported written: their
        # acknowledgements to the inputs may have died with it.
        in_its_stead = int(re.search(r"tm: builder 'tb1' lost .*, the last (\d+) it wrote "
                                     r"acknowledged to the inputs", self.logs_said()).group(1))
        print(f"\ntcp: killed tb1: {tm['timeslices_salvaged']} found on its disk, {in_its_stead} "
              f"it wrote acknowledged in its stead; the link to in0 reset after, {told_again} "
              f"acknowledgement(s) told it again", flush=True)
        # On a loaded host tb1 may have written nothing in its last 300 ms: then only those it
        # reported written are acknowledged in its stead.
        self.assertGreater(told_again, 0, tm)
        self.assertEqual(told_again, tm["timeslices_salvaged"] + in_its_stead)
        self.assert_contiguous_once(self.dump(), summary)

    def logs_said(self, logs="logs"):
        """What the run's logs in the test's folder `logs` say so far."""
        text = ""
        for name in os.listdir(self.path(logs)):
            with open(os.path.join(self.path(logs), name), errors="replace") as f:
                text += f.read()
        return text

    def reset_run(self, case, sender, receiver, order, manager, count=500):
        """A run of `count` timeslices whose link from sender to receiver is reset once (the
        fault transport, as a TCP reset from the network would), every timeslice then written
        once and whole; returns (summary, what the logs said)."""
        text = ts_config("tcp", inputs=f"pace: max, count: {count}, order: {order}",
                         manager=manager)
        text += (f"faults:\n  - {{from: {sender}, to: {receiver}, reset: true, "
                 f"after_messages: 20}}\n")
        if os.path.exists(self.path("run-data")):  # the last run's, out of dump()'s way
            os.rename(self.path("run-data"), self.path(f"run-data-{case - 1}"))
        logs = f"logs-{case}"
        code, out, summary = self.run_config(self.write_config("ts.yaml", text), "--duration",
                                             "0", timeout=180, logs=logs)
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        self.assertEqual(summary["results"]["timeslices_incomplete"], 0, summary["results"])
        apps = summary["applications"]
        self.assertEqual(apps["in0"]["results"]["lost_builders"], [])
        for b in BUILDERS:
            self.assertEqual(apps[b]["results"]["lost_inputs"], [], b)
        said = self.logs_said(logs)
        self.assert_built_once(self.dump(), count)
        return summary, said

    def test_a_reset_link_between_an_input_and_a_builder_is_dialed_again_and_loses_nothing(self):
        """The link between in0 and tb1 reset from either end (both processes live), in the
        chaotic order, in the builders' turns and with a manager: in0 dials tb1 again and sends
        it what it had not acknowledged; tb1 waits for in0 meanwhile. Neither counts the other
        lost. (Each took the other for lost: tb1 wrote the rest without in0, in0 sent tb1's
        timeslices elsewhere or held them, and the run never ended.)"""
        cases = (("in0", "tb1", "chaotic", None), ("tb1", "in0", "scheduled", None),
                 ("in0", "tb1", "chaotic", ""))
        for case, (sender, receiver, order, manager) in enumerate(cases):
            with self.subTest(reset=f"{sender} -> {receiver}", order=order,
                              manager=manager is not None):
                _, said = self.reset_run(case, sender, receiver, order, manager)
                self.assertIn("in0: the link to builder 'tb1' is back", said)
                # From whichever end saw the reset first.
                self.assertRegex(said, r"tb1: (input 'in0' dialed again|the old link to input "
                                       r"'in0' failed \(.*\); it dialed again)")

    def test_a_reset_link_between_a_builder_and_the_manager_is_dialed_again_and_loses_nothing(self):
        """The link between tb1 and the manager reset from either end: the manager loses tb1 and
        gives what it had not granted to the others; tb1 dials the manager again, asks again for
        the answers and says again the writes that may have been lost with the link, is fenced
        and rejoins. (tb1 did not dial again: its timeslices stayed open, and the run never
        ended.)"""
        for case, (sender, receiver) in enumerate((("tb1", "tm"), ("tm", "tb1"))):
            with self.subTest(reset=f"{sender} -> {receiver}"):
                summary, said = self.reset_run(case, sender, receiver, "chaotic", "")
                tm = summary["applications"]["tm"]["results"]
                self.assertEqual(tm["lost_builders"], ["tb1"], tm)
                self.assertEqual(tm["rejoined_builders"], ["tb1"], tm)
                self.assertEqual(tm["timeslices_in_doubt"], 0, tm)
                self.assertEqual(tm["timeslices_done"], 500, tm)
                self.assertIn("tb1: the link to the manager 'tm' is back", said)
                print(f"\nreset {sender} -> {receiver}: {tm['timeslices_reassigned']} "
                      f"reassigned, {tm['commits_granted_again']} granted again", flush=True)

    def test_a_reset_link_between_the_manager_and_an_input_is_dialed_again_and_loses_nothing(self):
        """The link from the manager to in0 reset (both processes live): the manager dials in0
        again and tells it every open assignment again (what was on the old link may be gone);
        in0 waits for it meanwhile. (in0 failed, and with it the run.)"""
        _, said = self.reset_run(0, "tm", "in0", "chaotic", "")
        self.assertIn("tm: the link to input 'in0' is back", said)
        self.assertIn("in0: the manager dialed again", said)

    def start_run(self, text):
        config = self.write_config("ts.yaml", text)
        run = self.start(["run", config, "--duration", "0", "--status-interval", "0.5",
                          "--summary", self.path("summary.json"), "--log-dir",
                          self.path("logs")], "run.log")
        return run

    def result_of(self, port, app, key):
        """One figure of an application's results (0 while it cannot be read)."""
        try:
            status, body = http(port, "GET", f"/api/v1/apps/{app}")
            return body["results"].get(key, 0) if status == 200 else 0
        except OSError:
            return 0

    def acked(self, port, app):
        return self.result_of(port, app, "timeslices_acked")

    def written(self, port, app):
        return self.result_of(port, app, "timeslices_written")

    def finish(self, run):
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        with open(self.path("summary.json")) as f:
            return json.load(f)

    def test_a_killed_builder_process_loses_no_timeslice(self):
        """SIGKILL of tb1's process mid-run (inputs as fast as the builders take timeslices, so
        tb1 holds some): the inputs send what tb1 had not acknowledged to the next builder, and
        every timeslice they made is acknowledged by a builder."""
        text = ts_config("tcp", inputs="pace: max", output="{kind: discard}")
        run = self.start_run(text)
        ia = control_port(text, "ia")
        wait_until(lambda: self.acked(ia, "in0") >= 2000, 60, "2000 timeslices acknowledged")
        status, ctx = http(control_port(text, "ctx_tb1"), "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)

        def lost_everywhere():
            for c, ids in INPUTS.items():
                for i in ids:
                    status, body = http(control_port(text, c), "GET", f"/api/v1/apps/{i}")
                    if body["results"]["lost_builders"] != ["tb1"]:
                        return False
            return True
        wait_until(lost_everywhere, 30, "every input to lose tb1")
        # What each input sent to tb1 unacknowledged and then to the others. tb1 acknowledges a
        # timeslice to its inputs one after the other: killed between two, it leaves timeslices
        # that some inputs sent again and others (acknowledged, their copy dropped) did not.
        # Those are built again without the acknowledged inputs' parts: incomplete.
        sent_again = []
        for c, ids in INPUTS.items():
            for i in ids:
                status, body = http(control_port(text, c), "POST",
                                    f"/api/v1/apps/{i}/actions/sent_again", {"builder": "tb1"})
                self.assertEqual(status, 200, body)
                sent_again.append(set(body["result"]["timeslices"]))
        torn = set.union(*sent_again) - set.intersection(*sent_again)
        at_loss = self.acked(ia, "in0")
        wait_until(lambda: self.acked(ia, "in0") >= at_loss + 2000, 60,
                   "2000 more timeslices acknowledged by the others")
        summary = self.finish(run)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        self.assertEqual(len(summary["lost"]), 1, summary["lost"])
        self.assertIn("ctx_tb1", summary["lost"][0])
        apps = summary["applications"]
        made = []
        for ids in INPUTS.values():
            for i in ids:
                r = apps[i]["results"]
                # Halted: nothing retained, so every timeslice it made was acknowledged.
                self.assertEqual(r["timeslices_retained"], 0, (i, r))
                self.assertEqual(r["timeslices_acked"], r["timeslices_sent"], (i, r))
                self.assertEqual(r["lost_builders"], ["tb1"], (i, r))
                made.append(r["timeslices_sent"])
        # Halted one after the other, the inputs end a few timeslices apart (as fast as taken).
        resent = summary["results"]["contributions_resent"]
        print(f"\ntcp: killed tb1: {resent} contributions sent again, {max(made)} timeslices, "
              f"{len(torn)} acknowledged to some inputs only", flush=True)
        self.assertGreater(resent, 0, "tb1 held timeslices when it was killed")
        survivors = sum(apps[b]["results"]["timeslices_written"] for b in BUILDERS if b != "tb1")
        self.assertGreater(survivors, 0)
        incomplete = 0
        for b in BUILDERS:
            if b == "tb1":
                continue
            r = apps[b]["results"]
            self.assertEqual(r["lost_inputs"], [], (b, r))
            self.assertEqual(r["timeslices_building"], 0, (b, r))
            incomplete += r["timeslices_incomplete"]
        # Only the last timeslices, those some inputs did not make before they were halted, and
        # those tb1 had acknowledged to some inputs only.
        self.assertLessEqual(incomplete, max(made) - min(made) + len(torn), (made, sorted(torn)))

    def test_a_killed_builder_process_writing_files_leaves_every_timeslice_on_disk_once(self):
        """Round robin with file outputs: SIGKILL of tb1's process mid-run. The inputs send what
        tb1 had not acknowledged to the next builder; tb1's files are cut before the first of
        those and finished, so every timeslice is on disk once, and the summary counts for tb1
        what its finished files hold."""
        text = ts_config("tcp", inputs="pace: max")
        run = self.start_run(text)
        ia = control_port(text, "ia")
        wait_until(lambda: self.acked(ia, "in0") >= 1000, 60, "1000 timeslices acknowledged")
        status, ctx = http(control_port(text, "ctx_tb1"), "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)
        wait_until(lambda: "builder 'tb1': salvaged" in self.output_of("run.log")
                   or run.poll() is not None, 60, "the salvage of tb1's files")
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        at_loss = self.acked(ia, "in0")
        wait_until(lambda: self.acked(ia, "in0") >= at_loss + 1000, 60,
                   "1000 more timeslices acknowledged by the others")
        summary = self.finish(run)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        self.assertEqual(len(summary["lost"]), 1, summary["lost"])
        self.assertRegex(summary["lost"][0], r"builder 'tb1': salvaged \d+ file\(s\)")
        written = self.assert_files_match_the_summary(summary)
        print(f"\ntcp: killed tb1 writing files: {summary['results']['contributions_resent']} "
              f"contributions sent again, {written} timeslices on disk once; "
              f"{summary['lost'][0]}", flush=True)

    def example_run(self):
        """examples/timeslice.yaml as shipped (fresh ports), run until stopped; returns the run,
        the configuration's text and a function giving the manager's timeslices_done."""
        text = rewrite_ports(read_example("timeslice.yaml"))
        run = self.start_run(text)
        control = control_port(text, "control")
        return run, text, lambda: self.manager_results(control).get("timeslices_done", 0)

    def assert_files_match_the_summary(self, summary):
        """Every timeslice index once in the finished files, no .part left, and each builder's
        timeslices_written in the summary (a dead one's from its salvage) is what its files
        hold."""
        self.assertFalse([n for n in os.listdir(self.path("run-data")) if n.endswith(".part")])
        code, out = self.daqflow(["dump", self.path("run-data"), "--json", "--events"],
                                 timeout=120)
        self.assertEqual(code, 0, out[:3000])
        report = json.loads(out)
        self.assertTrue(report["all_verified"], out[:3000])
        numbers = sorted(e["event"] for f in report["files"] for e in f["event_list"])
        self.assertEqual(numbers, list(range(len(numbers))), "every timeslice once")
        on_disk = {}
        for f in report["files"]:
            builder = re.match(r"run\d+_(tb\d)_", os.path.basename(f["path"])).group(1)
            on_disk[builder] = on_disk.get(builder, 0) + len(f["event_list"])
        apps = summary["applications"]
        in_summary = {b: apps[b]["results"]["timeslices_written"] for b in BUILDERS}
        self.assertEqual(in_summary, {b: on_disk.get(b, 0) for b in BUILDERS})
        self.assertEqual(summary["results"]["timeslices_written"], len(numbers))
        self.assertEqual(summary["results"]["timeslices_not_written"], 0)
        return len(numbers)

    def test_the_example_goes_on_when_a_builder_process_is_killed(self):
        """examples/timeslice.yaml: the process of tb2 and tb3 (and their clock client) killed;
        the clock client follows the builders' fate, so the run goes on; their files are
        salvaged and the summary counts what is on disk."""
        run, text, done = self.example_run()
        wait_until(lambda: done() >= 100, 60, "100 timeslices written")
        status, ctx = http(control_port(text, "builders23"), "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)
        wait_until(lambda: "builder 'tb3':" in self.output_of("run.log") or run.poll() is not None,
                   60, "the salvage of tb2's and tb3's files")
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        at_loss = done()
        wait_until(lambda: done() >= at_loss + 100, 60, "100 more timeslices written")
        summary = self.finish(run)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        self.assertEqual(len(summary["lost"]), 1, summary["lost"])
        self.assertIn("builders23", summary["lost"][0])
        for builder in ("tb2", "tb3"):
            self.assertRegex(summary["lost"][0], rf"builder '{builder}': \d+ timeslice\(s\) in "
                             rf"doubt, \d+ on disk; \d+ file\(s\) finished")
        apps = summary["applications"]
        self.assertEqual({a: apps[a]["state"] for a in ("tb2", "tb3", "clk_b23")},
                         {"tb2": "Lost", "tb3": "Lost", "clk_b23": "Lost"})
        self.assertEqual(apps["tm"]["results"]["timeslices_in_doubt"], 0)
        written = self.assert_files_match_the_summary(summary)
        print(f"\nexample, builders23 killed: {written} timeslices, "
              f"{apps['tm']['results']['timeslices_salvaged']} found on the lost builders' disk",
              flush=True)

    def test_the_example_goes_on_when_a_builder_process_is_frozen_for_8_s(self):
        """examples/timeslice.yaml: the process of tb2 and tb3 stopped for 8 s, then resumed:
        the manager fences them and the others build on; they rejoin; the run ends ok with every
        timeslice once."""
        run, text, done = self.example_run()
        wait_until(lambda: done() >= 100, 60, "100 timeslices written")
        status, ctx = http(control_port(text, "builders23"), "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        control = control_port(text, "control")
        os.kill(ctx["pid"], signal.SIGSTOP)
        frozen_at = time.monotonic()
        try:
            wait_until(lambda: sorted(self.manager_results(control).get("lost_builders", []))
                       == ["tb2", "tb3"], 30, "the manager to lose the frozen tb2 and tb3")
            at_loss = done()
            wait_until(lambda: done() >= at_loss + 50, 60, "50 more timeslices by tb0 and tb1")
            time.sleep(max(0.0, frozen_at + 8.0 - time.monotonic()))  # 8 s at least
        finally:
            os.kill(ctx["pid"], signal.SIGCONT)
        wait_until(lambda: sorted(self.manager_results(control).get("rejoined_builders", []))
                   == ["tb2", "tb3"], 60, "tb2 and tb3 to rejoin")
        at_rejoin = done()
        wait_until(lambda: done() >= at_rejoin + 100, 60, "100 more timeslices written")
        summary = self.finish(run)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        apps = summary["applications"]
        self.assertEqual({i: a["state"] for i, a in apps.items() if a["state"] != "Halted"}, {})
        self.assertEqual(apps["tm"]["results"]["timeslices_in_doubt"], 0)
        written = self.assert_files_match_the_summary(summary)
        print(f"\nexample, builders23 frozen: {written} timeslices, "
              f"{apps['tm']['results']['timeslices_reassigned']} reassigned", flush=True)

    def test_recorded_microslices_are_replayed_as_they_were(self):
        """A run's archives replayed by its inputs (`input: {kind: replay}`): the 199 timeslices a
        recording of 200 gives (its last interval is the overlap of the one before) are built again with every
        microslice as recorded: sizes, CRC-32Cs, start times and the overlaps."""
        self.clean_run("shm", "chaotic")
        recorded = self.path("recorded")
        os.rename(self.path("run-data"), recorded)
        before = {t["event"]: t for t in self.dump_of(recorded)}
        text = ts_config("shm", inputs=f"pace: max, input: {{kind: replay, path: {recorded}}}")
        code, out, summary = self.run_config(self.write_config("replay.yaml", text), "--duration",
                                             "0", timeout=180)
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["results"]["timeslices_complete"], 199, summary["results"])
        after = self.dump()
        self.assertEqual(sorted(t["event"] for t in after), list(range(199)))
        for t in after:
            was = before[t["event"]]
            self.assertEqual(t["size"], was["size"], t["event"])
            self.assertEqual(t["start_ns"], was["start_ns"], t["event"])
            recorded_components = {c["eq_id"]: c for c in was["components"]}
            for c in t["components"]:
                self.assertEqual(c, recorded_components[c["eq_id"]], t["event"])

    def test_a_replay_of_another_geometry_is_refused_naming_the_file(self):
        self.clean_run("tcp", "chaotic")
        recorded = self.path("recorded")
        os.rename(self.path("run-data"), recorded)
        text = ts_config("tcp", inputs=f"pace: max, input: {{kind: replay, path: {recorded}}}")
        text = text.replace("overlap_us: 300", "overlap_us: 200")
        code, out, _ = self.run_config(self.write_config("replay.yaml", text), "--duration", "0")
        self.assertNotEqual(code, 0, out)
        self.assertIn("input.path", out)
        self.assertIn(recorded, out)
        self.assertIn("3 of overlap", out)

    def dump_of(self, folder):
        code, out = self.daqflow(["dump", folder, "--json", "--events"], timeout=120)
        self.assertEqual(code, 0, out[:3000])
        return [e for f in json.loads(out)["files"] for e in f["event_list"]]

    def test_complete_timeslices_go_to_the_farm_and_each_is_decided_once(self):
        """Builders with output {kind: farm}: every complete timeslice goes to an SFC, which
        hands it to one of two workers (tokens) reading it in place over shm; each of the 200
        timeslices is decided once, the inputs are acknowledged only once the SFC took them, and
        the accepted ones are on disk once (the SFC's files, verified by daqflow dump). Four
        inputs over shm make 21 pieces: each timeslice goes as one copy."""
        text = ts_config("shm", inputs="pace: max, count: 200", output="{kind: farm, sfc: sfc0}")
        text += (f"  - name: farm\n    host: 127.0.0.1\n    control_port: 60\n"
                 f"    data_port: 61\n    applications:\n"
                 f"      - {{type: sfc, id: sfc0, inputs: [{', '.join(BUILDERS)}], workers: [w0, w1], "
                 f"policy: tokens, output: {{kind: file}}}}\n"
                 f"      - {{type: worker, id: w0, sfc: sfc0, accept_fraction: 0.2, "
                 f"output_bytes: 512, seed: 1}}\n"
                 f"      - {{type: worker, id: w1, sfc: sfc0, accept_fraction: 0.2, "
                 f"output_bytes: 512, seed: 2}}\n")
        text = rewrite_ports(text)
        code, out, summary = self.run_config(self.write_config("farm.yaml", text), "--duration",
                                             "0", timeout=180)
        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        apps = summary["applications"]
        sfc = apps["sfc0"]["results"]
        self.assertEqual(sfc["events_received"], 200, sfc)
        self.assertEqual(sfc["events_decided"], 200, sfc)
        self.assertEqual(sfc["events_duplicate"], 0, sfc)
        self.assertEqual(sum(sfc["workers"].values()), 200, sfc)
        self.assertEqual(summary["results"]["timeslices_complete"], 200, summary["results"])
        for ids in INPUTS.values():
            for i in ids:
                self.assertEqual(apps[i]["results"]["timeslices_acked"], 200, i)
        # 4 inputs over shm: 1 + 5 x 4 pieces, each timeslice copied into one buffer.
        self.assertEqual(sum(apps[b]["results"]["timeslices_copied"] for b in BUILDERS), 200)
        accepted = sum(apps[w]["results"]["events_accepted"] for w in ("w0", "w1"))
        self.assertGreater(accepted, 0)
        code, dumped = self.daqflow(["dump", self.path("run-data"), "--json", "--events"],
                                    timeout=120)
        self.assertEqual(code, 0, dumped[:3000])
        report = json.loads(dumped)
        numbers = sorted(e["event"] for f in report["files"] for e in f["event_list"])
        self.assertEqual(len(numbers), accepted)
        self.assertEqual(len(set(numbers)), accepted, "no timeslice written twice")
        self.assertTrue(all(0 <= n < 200 for n in numbers), numbers)

    def test_a_killed_input_process_flags_timeslices_incomplete(self):
        """SIGKILL of the process of in2 and in3: the builders write the timeslices in flight
        without them, flagged incomplete and naming them, and the run goes on with in0 and in1."""
        text = ts_config("tcp")  # the builders learn of the loss from the closed links
        run = self.start_run(text)
        ia = control_port(text, "ia")
        wait_until(lambda: self.acked(ia, "in0") >= 100, 60, "100 timeslices acknowledged")
        status, ctx = http(control_port(text, "ib"), "GET", "/api/v1/context")
        self.assertEqual(status, 200, ctx)
        os.kill(ctx["pid"], signal.SIGKILL)
        at_loss = self.acked(ia, "in0")
        wait_until(lambda: self.acked(ia, "in0") >= at_loss + 100, 60,
                   "100 more timeslices acknowledged")
        summary = self.finish(run)
        self.assertEqual(len(summary["lost"]), 1, summary["lost"])
        apps = summary["applications"]
        incomplete = 0
        for b in BUILDERS:
            r = apps[b]["results"]
            self.assertEqual(sorted(r["lost_inputs"]), ["in2", "in3"], (b, r))
            incomplete += r["timeslices_incomplete"]
            self.assertGreater(r["missing_by_input"].get("in2", 0), 0, (b, r))
        self.assertGreater(incomplete, 0)
        timeslices = self.dump()
        flagged = [t for t in timeslices if t["flags"] != 0]
        self.assertEqual(len(flagged), incomplete)
        for t in flagged:
            self.assertLess(len(t["components"]), 4, t["event"])
        # in0 and in1 end in order (halted one after the other, each when it is halted): one
        # missing from a timeslice is missing from every later one. in2 and in3 end where the
        # kill took them: their contributions to different builders go on links of their own, so
        # one sent just before the kill can arrive while an older one, still waiting for room
        # at its builder, never left. That ragged edge is shorter than what an input keeps in
        # flight; from it on they are missing from every timeslice.
        numbers = sorted(t["event"] for t in timeslices)
        self.assertEqual(numbers, list(range(len(numbers))), "no timeslice skipped")
        by_index = {t["event"]: {c["eq_id"] for c in t["components"]} for t in timeslices}
        in_flight = apps["in0"]["results"]["in_flight"]
        for eq_id in range(4):
            missing = [n for n in numbers if eq_id not in by_index[n]]
            if eq_id < 2:
                if missing:
                    self.assertEqual(missing, list(range(missing[0], len(numbers))), eq_id)
                continue
            self.assertTrue(missing, f"eq_id {eq_id} is missing after the kill")
            present = [n for n in numbers if eq_id in by_index[n]]
            self.assertLess(max(present) - missing[0], in_flight, (eq_id, missing[:20]))
        complete = [t for t in timeslices if t["flags"] == 0]
        self.assertTrue(all(len(t["components"]) == 4 for t in complete))


if __name__ == "__main__":
    unittest.main()
