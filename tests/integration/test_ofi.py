"""`daqflow run` over the ofi (libfabric) transport with the tcp;ofi_rxm provider, one process
per context: the 1-to-1 stream with every byte checked by the sink, and the two-stage event
builder (examples/local.yaml, output discarded) building every triggered event."""

import re
import subprocess
import unittest

from daqflow_testlib import (DaqflowTestCase, daqflow_binary, read_example, rewrite_ports,
                             set_default_transport, set_param)

PROVIDER = "tcp;ofi_rxm"


def ofi_built():
    try:
        out = subprocess.run([daqflow_binary(), "transports"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=30).stdout.decode()
    except (OSError, subprocess.TimeoutExpired):
        return False
    built = re.search(r"^built:(.*)$", out, re.M)
    return built is not None and "ofi" in built.group(1).split()


def over_ofi(text):
    """The configuration with ofi as the default transport, on PROVIDER (named explicitly, so
    the test does not depend on the default)."""
    text = set_default_transport(rewrite_ports(text), "ofi")
    new = text.replace("default: ofi", f'default: ofi, ofi_provider: "{PROVIDER}"', 1)
    if new == text:
        raise AssertionError("the configuration has no flow-style transports section")
    return new


class OfiRun(DaqflowTestCase):
    def setUp(self):
        super().setUp()
        self.assertTrue(ofi_built(), "this daqflow was built without the ofi transport (libfabric)")

    def test_stream_checks_every_byte(self):
        text = over_ofi(read_example("stream-1to1.yaml"))
        text = text.replace("[sink0], message_size: 1048576}",
                            "[sink0], message_size: 1048576, verify: full}")
        text = text.replace("{type: sink, id: sink0}", "{type: sink, id: sink0, verify: full}")
        self.assertEqual(text.count("verify: full"), 2, text)
        config = self.write_config("stream-ofi.yaml", text)

        code, out, summary = self.run_config(config, "--duration", "3", timeout=120)

        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", summary.get("failure"))
        self.assertEqual(summary["lost"], [])
        apps = summary["applications"]
        for app_id, app in apps.items():
            self.assertEqual(app["state"], "Halted", f"{app_id}: {app}")
            for name, value in app["metrics"].items():
                if "error" in name:
                    self.assertEqual(value, 0, f"{app_id} metric {name}")
        sink, source = apps["sink0"], apps["src0"]
        self.assertGreater(sink["metrics"]["messages_in"], 0, "the sink received nothing")
        self.assertEqual(sink["results"]["errors_sequence"], 0)
        self.assertEqual(sink["results"]["errors_pattern"], 0)
        self.assertEqual(source["results"]["verify"], "full")
        # Everything sent arrived: the source stops sending before the sink halts.
        self.assertEqual(sink["metrics"]["messages_in"], source["metrics"]["messages_out"])
        self.assertEqual(sink["metrics"]["bytes_in"], source["metrics"]["bytes_out"])
        self.assertGreater(summary["results"]["throughput_mb_s"], 0)

    def test_event_builder_builds_every_event(self):
        text = set_param(over_ofi(read_example("local.yaml")), "kind", "discard")
        config = self.write_config("local-ofi.yaml", text)

        code, out, summary = self.run_config(config, "--duration", "3", timeout=120)

        self.assertEqual(code, 0, out)
        self.assertEqual(summary["status"], "ok", out)
        self.assertEqual(summary["lost"], [])
        r = summary["results"]
        self.assertGreater(r["events_triggered"], 0, r)
        self.assertEqual(r["events_triggered"], r["events_built"], r)
        self.assertEqual(r["events_incomplete"], 0, r)
        self.assertEqual(r["events_lost"], 0, r)
        self.assertEqual(r["lost_bus"], [], r)
        self.assertEqual(r["bus"]["bu1"] + r["bus"]["bu2"], r["events_built"], r)
        evm = summary["applications"]["evm0"]
        self.assertEqual(evm["state"], "Halted")
        self.assertEqual(evm["metrics"]["events_in_flight"], 0)
        for bu in ("bu1", "bu2"):
            self.assertEqual(summary["applications"][bu]["results"]["events_corrupted"], 0)


if __name__ == "__main__":
    unittest.main()
