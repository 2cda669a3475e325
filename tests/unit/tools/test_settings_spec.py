"""The settings schema generator (cmake/settings_spec.py): what it makes of each form of key and
of an application type, and the errors that name the schema and the key."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

GENERATOR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "cmake", "settings_spec.py")

GOOD = """
header: apps/counter.hpp
namespace: daqflow::apps
settings: CounterSettings
includes: [daqflow/apps/output/output.hpp]
application:
  type: counter
  class: Counter
  help: counts what it is sent
  enable_rank: -5
  peers: [peer]
  survivable: true
  fold_results: true
keys:
  peer: {kind: app_ref, help: where to send}
  count: {kind: integer, help: messages, default: 100, range: [1, 1000000]}
  rate: {kind: number, help: 'messages a second; 0: unlimited', default: 0.5, at_least: 0}
  mode: {kind: string, help: how, default: fast, one_of: [fast, slow]}
  ids: {kind: integer_list, help: ids, default: []}
  size:
    kind: object
    help: sizes
    type: SizeSettings
    fields:
      max: {kind: integer, help: largest, default: 64, member: largest}
  fed: {include: 'fed::FedSettings::spec()'}
  output: {param: 'output::output_spec_with_farm("events")'}
"""


def run(schema_text):
    with tempfile.TemporaryDirectory() as d:
        schema = os.path.join(d, "counter.settings.yaml")
        out = os.path.join(d, "out.cpp")
        with open(schema, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(schema_text))
        p = subprocess.run([sys.executable, GENERATOR, schema, out], capture_output=True,
                           text=True, check=False)
        text = open(out, encoding="utf-8").read() if p.returncode == 0 else ""
        return p.returncode, text, p.stderr.replace(schema, "SCHEMA")


class Generated(unittest.TestCase):
    def test_every_form_of_key(self):
        rc, text, err = run(GOOD)
        self.assertEqual(rc, 0, err)
        for expected in [
            '#include "apps/counter.hpp"',
            '#include "daqflow/apps/output/output.hpp"',
            "const runtime::SettingsSpec<CounterSettings>& CounterSettings::spec() {",
            '.bind(runtime::ParamSpec::app_ref("peer", "where to send"), &CounterSettings::peer)',
            '.bind(runtime::ParamSpec::integer("count", "messages").default_value(std::int64_t{100})'
            ".range(1, 1000000), &CounterSettings::count)",
            '.bind(runtime::ParamSpec::number("rate", "messages a second; 0: unlimited")'
            ".default_value(0.5).at_least(0), &CounterSettings::rate)",
            '.default_value("fast").one_of({"fast", "slow"}), &CounterSettings::mode)',
            '.default_json_text("[]"), &CounterSettings::ids)',
            '.bind(runtime::ParamSpec::integer("max", "largest").default_value(std::int64_t{64}),'
            " &SizeSettings::largest)",
            '.bind("size", "sizes", size_fields, &CounterSettings::size)',
            ".include(fed::FedSettings::spec(), &CounterSettings::fed)",
            '.bind(output::output_spec_with_farm("events"), &CounterSettings::output)',
        ]:
            self.assertIn(expected, text)

    def test_registry_entry(self):
        rc, text, err = run(GOOD)
        self.assertEqual(rc, 0, err)
        entry = text[text.index("runtime::AppType counter_type() {"):]
        for expected in [
            'runtime::app_type<Counter>("counter", "counts what it is sent");',
            "t.enable_rank = -5;",
            't.peer_params = {"peer"};',
            "t.survivable = true;",
            "t.fold_results = &Counter::fold_results;",
        ]:
            self.assertIn(expected, entry)
        self.assertNotIn("auxiliary", entry)
        self.assertNotIn("after_loss", entry)


class Errors(unittest.TestCase):
    def expect_error(self, schema_text, message):
        rc, _, err = run(schema_text)
        self.assertNotEqual(rc, 0)
        self.assertIn(message, err)

    def test_unknown_kind_names_the_key(self):
        self.expect_error(GOOD.replace("kind: integer_list", "kind: list"),
                          "SCHEMA: keys.ids: kind must be one of")

    def test_key_without_help(self):
        self.expect_error(GOOD.replace("peer: {kind: app_ref, help: where to send}",
                                       "peer: {kind: app_ref}"),
                          "SCHEMA: keys.peer: every key needs its help")

    def test_unknown_attribute(self):
        self.expect_error(GOOD.replace("default: 0.5", "defualt: 0.5"),
                          "SCHEMA: keys.rate: unknown attribute(s) ['defualt']")

    def test_nested_key_names_its_path(self):
        self.expect_error(GOOD.replace("max: {kind: integer,", "max: {kind: int,"),
                          "SCHEMA: keys.size.max: kind must be one of")

    def test_peer_that_names_no_application(self):
        self.expect_error(GOOD.replace("peers: [peer]", "peers: [count]"),
                          "SCHEMA: application.peers: 'count' is no app_ref or app_ref_list key")

    def test_bad_range(self):
        self.expect_error(GOOD.replace("range: [1, 1000000]", "range: [1]"),
                          "SCHEMA: keys.count: range is [lo, hi]")

    def test_missing_field_and_unknown_field(self):
        self.expect_error(GOOD.replace("settings: CounterSettings\n", ""), "SCHEMA: no settings")
        self.expect_error(GOOD + "extra: 1\n", "SCHEMA: unknown field(s) ['extra']")


if __name__ == "__main__":
    unittest.main()
