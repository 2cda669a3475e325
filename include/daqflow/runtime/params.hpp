#pragma once
// Application parameters: each application type declares its parameters (name, kind, default,
// bounds); the configuration loader and the control API validate values against them.

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

#include "daqflow/core/result.hpp"

namespace daqflow::runtime {

enum class ParamKind {
  integer,       // JSON integer within [min, max]
  number,        // JSON number within [min, max]
  boolean,
  string,        // optionally one of choices
  app_ref,       // the id of another application in the cluster
  app_ref_list,  // a list of application ids
  integer_list,  // a list of integers within [min, max]
  object,        // a mapping with its own fields
};

struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::integer;
  std::string help;
  // JSON text of the default ("8", "\"tcp\"", "[]"); empty = required.
  std::string default_json;
  std::optional<double> min;
  std::optional<double> max;
  std::vector<std::string> choices;  // string: allowed values
  std::vector<ParamSpec> fields;     // object: its fields
};

[[nodiscard]] const char* to_string(ParamKind kind);

// Checks one value against its spec; the error says what is wrong (without the name).
[[nodiscard]] Result<void> check_param_value(const ParamSpec& spec, const nlohmann::json& value);

// Validates a whole parameter object against specs: unknown keys, kinds, bounds, required keys;
// returns the object with defaults filled in. Used by PUT /params (the loader reports YAML
// positions itself, with the same checks).
[[nodiscard]] Result<nlohmann::json> validate_params(const std::vector<ParamSpec>& specs,
                                                     const nlohmann::json& params);

}  // namespace daqflow::runtime
