"""Multicast control traffic with retry (docs/timeslices.md): one sender and three
receivers in four processes over loopback multicast, while a stream source sends to a sink over
tcp beside them. Two receivers drop 1% and 5% of the datagrams that reach them (a lossy
network); their negative acknowledgements get every message back: each receiver reports the
messages sent, lost before the retry, and lost after it (0), and checks every message's
contents."""

import unittest

import json

from daqflow_testlib import PORTS, DaqflowTestCase, http, rewrite_ports, wait_until

COUNT = 20000


def mcast_config():
    port = PORTS.take(1)
    group = f"239.255.{(port >> 8) & 255}.{port & 255}"
    common = f"group: {group}, port: {port}"
    text = (
        "run: {output: ./run-data}\n"
        "transports: {default: tcp, max_message_size: 65536}\n"
        "contexts:\n"
        f"  - {{name: master, host: 127.0.0.1, control_port: 1, data_port: 2, applications: "
        f"[{{type: mcast_sender, id: ms, {common}, rate_hz: 20000, size: 512, count: {COUNT}}}, "
        f"{{type: source, id: src, destinations: [sink0], message_size: 65536}}]}}\n")
    for i, drop in enumerate((0, 0.01, 0.05)):
        text += (f"  - {{name: node{i}, host: 127.0.0.1, control_port: {10 + i}, "
                 f"data_port: {20 + i}, applications: [{{type: mcast_receiver, id: mr{i}, "
                 f"{common}, drop_fraction: {drop}, seed: {i + 1}}}"
                 + (", {type: sink, id: sink0, sources: [src]}" if i == 0 else "") + "]}\n")
    return rewrite_ports(text)


def control_port(text, ctx):
    for line in text.splitlines():
        if f"name: {ctx}," in line:
            return int(line.split("control_port: ")[1].split(",")[0])
    raise KeyError(ctx)


class Multicast(DaqflowTestCase):
    def test_every_message_arrives_after_retry(self):
        text = mcast_config()
        run = self.start(["run", self.write_config("mcast.yaml", text), "--duration", "0",
                          "--summary", self.path("summary.json"), "--log-dir",
                          self.path("logs")], "run.log")

        def delivered(i):
            try:
                status, body = http(control_port(text, f"node{i}"), "GET",
                                    f"/api/v1/apps/mr{i}")
                return body["results"].get("delivered", 0) if status == 200 else 0
            except OSError:
                return 0
        # The stream runs without end beside the control traffic; the run is stopped once every
        # receiver has every message.
        wait_until(lambda: all(delivered(i) >= COUNT for i in range(3)), 90,
                   f"every receiver to deliver {COUNT} messages")
        self.assertIsNone(run.poll(), self.output_of("run.log"))
        self.assertEqual(self.stop_run(run), 0, self.output_of("run.log"))
        with open(self.path("summary.json")) as f:
            summary = json.load(f)
        apps = summary["applications"]
        sent = apps["ms"]["results"]["sent"]
        self.assertEqual(sent, COUNT)
        print(f"\nmulticast: {sent} sent, {apps['ms']['results']['repairs_sent']} repairs",
              flush=True)
        for i, drop in enumerate((0, 0.01, 0.05)):
            r = apps[f"mr{i}"]["results"]
            print(f"  mr{i} (drop {drop:.0%}): lost before retry {r['lost_before_retry']}, "
                  f"after retry {r['lost_after_retry']}, NACKs {r['nacks_sent']}", flush=True)
            self.assertEqual(r["delivered"], COUNT, r)
            self.assertEqual(r["lost_after_retry"], 0, r)
            self.assertEqual(r["content_errors"], 0, r)
            self.assertEqual(r["malformed"], 0, r)
            self.assertEqual(r["recovered"], r["lost_before_retry"], r)
            if drop > 0:
                # The drops are real losses: repaired, not absent.
                self.assertGreater(r["lost_before_retry"], COUNT * drop / 2, r)
        # The data flowed beside the control traffic.
        self.assertGreater(apps["sink0"]["metrics"].get("messages_in", 0), 0)


if __name__ == "__main__":
    unittest.main()
