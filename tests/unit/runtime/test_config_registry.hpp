#pragma once
// A registry of small application types for the configuration and parameter tests: enough
// kinds of parameters and peer links to exercise the loader, without the real applications.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daqflow/runtime/application.hpp"

namespace daqflow::runtime::config_testing {

class IdleApp final : public Application {
 public:
  Result<void> configure(AppContext&) override { return ok(); }
  int do_work() override { return 0; }
};

// Builders for specs: the designated-initializer form trips -Wmissing-field-initializers.
inline ParamSpec param(std::string name, ParamKind kind, std::string default_json = {}) {
  ParamSpec s;
  s.name = std::move(name);
  s.kind = kind;
  s.default_json = std::move(default_json);
  return s;
}
inline ParamSpec bounded(ParamSpec s, std::optional<double> min, std::optional<double> max) {
  s.min = min;
  s.max = max;
  return s;
}
inline ParamSpec one_of(ParamSpec s, std::vector<std::string> choices) {
  s.choices = std::move(choices);
  return s;
}
inline ParamSpec with_fields(ParamSpec s, std::vector<ParamSpec> fields) {
  s.fields = std::move(fields);
  return s;
}

inline AppType fake_type(std::string name, std::vector<ParamSpec> params,
                         std::vector<std::string> peer_params = {}) {
  AppType t;
  t.name = std::move(name);
  t.help = "test type";
  t.params = std::move(params);
  t.peer_params = std::move(peer_params);
  t.make = [] { return std::make_unique<IdleApp>(); };
  return t;
}

// source: sends to `peer`; sink: receives, with an `output` object, and is survivable; helper:
// auxiliary, serves the applications beside it; ru: sends to `evm` and to every BU of `bus`.
inline AppRegistry fake_registry() {
  AppRegistry r;
  r.add(fake_type(
      "source",
      {
          param("peer", ParamKind::app_ref),
          bounded(param("message_size", ParamKind::integer, "4096"), 1, 1 << 20),
          bounded(param("rate", ParamKind::number, "0"), 0, std::nullopt),
          param("verify", ParamKind::boolean, "false"),
          one_of(param("pattern", ParamKind::string, "\"counter\""), {"counter", "random"}),
      },
      {"peer"}));
  AppType sink = fake_type(
      "sink", {
                  bounded(param("expect", ParamKind::integer, "0"), 0, std::nullopt),
                  param("label", ParamKind::string, "\"\""),
                  with_fields(param("output", ParamKind::object, R"({"kind": "null"})"),
                              {
                                  one_of(param("kind", ParamKind::string), {"file", "null"}),
                                  bounded(param("max_file_mb", ParamKind::integer, "256"), 1, 4096),
                              }),
              });
  sink.survivable = true;  // a run can go on without one (as without a BU)
  r.add(std::move(sink));
  AppType helper = fake_type("helper", {param("of", ParamKind::app_ref)}, {"of"});
  helper.auxiliary = true;  // serves the applications beside it (as a clock client)
  r.add(std::move(helper));
  r.add(fake_type("ru",
                  {
                      param("evm", ParamKind::app_ref),
                      param("bus", ParamKind::app_ref_list, "[]"),
                      bounded(param("feds", ParamKind::integer_list, "[]"), 0, 4095),
                  },
                  {"evm", "bus"}));
  return r;
}

}  // namespace daqflow::runtime::config_testing
