"""A real Prometheus (Debian's `prometheus`) scrapes every context of a running event builder
(examples/local.yaml, one process per context over TCP, discard outputs) once a second at
GET /metrics (docs/monitoring.md); the test asks Prometheus' own query API that every target is
up and that the rates of the built-events counters and of the transports' bytes are positive."""

import json
import os
import re
import subprocess
import unittest
import urllib.parse
import urllib.request

from daqflow_testlib import (PORTS, DaqflowTestCase, _LIVE, control_ports, read_example,
                             rewrite_ports, wait_until)


class PrometheusScrape(DaqflowTestCase):
    def _start_prometheus(self, targets):
        port = PORTS.take(1)
        config = self.write_config("prometheus.yml", "\n".join([
            "global:",
            "  scrape_interval: 1s",
            "  evaluation_interval: 1s",
            "scrape_configs:",
            "  - job_name: daqflow",
            "    static_configs:",
            "      - targets: [" + ", ".join(f"'127.0.0.1:{p}'" for p in targets) + "]",
            ""]))
        log = open(self.path("prometheus.log"), "w")
        proc = subprocess.Popen(["prometheus", f"--config.file={config}",
                                 f"--storage.tsdb.path={self.path('tsdb')}",
                                 f"--web.listen-address=127.0.0.1:{port}"],
                                cwd=self.dir, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        log.close()
        self.procs.append((proc, self.path("prometheus.log")))
        _LIVE.append(proc)
        return proc, port

    def _query(self, port, expr):
        """The instant vector of a PromQL expression: [(labels, value)]."""
        url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                answer = json.loads(r.read())
        except OSError:
            return []
        self.assertEqual(answer["status"], "success", answer)
        return [(s["metric"], float(s["value"][1])) for s in answer["data"]["result"]]

    def test_prometheus_scrapes_every_context_and_sees_events_built(self):
        text = rewrite_ports(read_example("local.yaml"))
        text = re.sub(r"output: \{kind: file[^}]*\}", "output: {kind: discard}", text)
        config = self.write_config("local.yaml", text)
        targets = control_ports(text)
        run = self.start(["run", config, "--duration", "0", "--status-interval", "1",
                          "--summary", self.path("summary.json")], "run.log")
        prometheus, port = self._start_prometheus(targets)

        def every_target_up():
            if prometheus.poll() is not None:
                raise AssertionError("prometheus ended:\n" + self.output_of("prometheus.log"))
            up = self._query(port, 'up{job="daqflow"}')
            return len(up) == len(targets) and all(v == 1 for _, v in up)

        wait_until(every_target_up, 60, "Prometheus to scrape every context", interval=0.5)

        def rates(expr):
            return {labels.get("application"): v for labels, v in self._query(port, expr)}

        built = wait_until(
            lambda: (lambda r: r if r.get("evm0", 0) > 0 and r.get("bu1", 0) > 0
                     and r.get("bu2", 0) > 0 else None)(
                rates("rate(daqflow_events_built_total[5s])")),
            60, "a positive rate of events built at the EVM and at both BUs", interval=0.5)
        sent = wait_until(
            lambda: (lambda r: r if all(r.get(ru, 0) > 0 for ru in ("ru1", "ru2", "ru3"))
                     else None)(rates('rate(daqflow_transport_sent_bytes_total{type="ru"}[5s])')),
            30, "every RU's transport to send bytes", interval=0.5)
        # Per peer: every RU sends to both BUs.
        per_peer = wait_until(
            lambda: (lambda pairs: pairs if all((ru, bu) in pairs for ru in ("ru1", "ru2", "ru3")
                                                for bu in ("bu1", "bu2")) else None)(
                {(labels.get("application"), labels.get("peer")) for labels, v in self._query(
                    port, 'rate(daqflow_peer_sent_bytes_total{type="ru"}[5s]) > 0')}),
            30, "each RU's bytes to each BU", interval=0.5)
        enabled = rates('daqflow_application_state{state="Enabled"} == 1')
        self.assertEqual(sorted(enabled), ["bu1", "bu2", "evm0", "ru1", "ru2", "ru3"], enabled)
        print(f"\nPrometheus: events built/s {built}; RU bytes sent/s {sent}; "
              f"RU->BU pairs {sorted(per_peer)}", flush=True)

        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        with open(self.path("summary.json")) as f:
            self.assertEqual(json.load(f)["status"], "ok")


if __name__ == "__main__":
    unittest.main()
