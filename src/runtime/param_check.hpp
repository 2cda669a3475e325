#pragma once
// The one implementation of parameter checks. The control API (validate_params, messages by
// parameter name) and the configuration loader (messages at YAML positions) both run
// check_param() and only format its issues differently, so a value accepted by one is accepted
// by the other.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/runtime/params.hpp"

namespace daqflow::runtime::detail {

// One problem found in a parameter value.
struct ParamIssue {
  enum class Kind { value, unknown_key, missing_key };
  Kind kind = Kind::value;
  // value: the value at fault ("output.kind", "peers[2]"); unknown_key / missing_key: the object
  // holding the key ("" for a top-level object).
  std::string path;
  std::string key;  // unknown_key / missing_key: the key
  // value: what is wrong, without the name ("expected an integer, got string \"abc\"");
  // unknown_key: the keys that are allowed, as a list; missing_key: empty.
  std::string message;
};

// Checks value against spec and returns it with the defaults of object fields filled in. Issues
// are appended with paths under `path`.
nlohmann::json check_param(const ParamSpec& spec, const nlohmann::json& value,
                           const std::string& path, std::vector<ParamIssue>& issues);

// Checks the keys of an object against field specs (unknown keys, required keys, each value)
// and returns it with defaults filled in.
nlohmann::json check_fields(const std::vector<ParamSpec>& fields, const nlohmann::json& object,
                            const std::string& path, std::vector<ParamIssue>& issues);

// The default of a spec, parsed from default_json (objects get their fields' defaults); an error
// names the parameter: a bad default is a bug in the application type, not in the configuration.
Result<nlohmann::json> param_default(const ParamSpec& spec);

[[nodiscard]] inline bool is_required(const ParamSpec& spec) {
  return spec.default_json.empty();
}

// "a.b" for a field, "a[3]" for an element.
std::string join_path(const std::string& path, std::string_view key);
std::string join_path(const std::string& path, std::size_t element);

// "a, b, c"
std::string join_names(const std::vector<std::string>& names);
// The candidate closest to key by edit distance, if close enough to be a typo; "" otherwise.
std::string closest_name(std::string_view key, const std::vector<std::string>& candidates);
// "unknown key 'pipline_depth' ... (did you mean 'pipeline_depth'? expected one of: ...)"
std::string expected_keys_hint(std::string_view key, const std::vector<std::string>& candidates);
// The hint for an unknown key among fields: where a field took it over, how it is written now
// (ParamSpec::replacing); otherwise expected_keys_hint().
std::string unknown_param_hint(std::string_view key, const std::vector<ParamSpec>& fields,
                               const std::vector<std::string>& candidates);
// A value as a person reads it in a message: "string \"abc\"", "integer 5", "a list".
std::string describe(const nlohmann::json& value);

}  // namespace daqflow::runtime::detail
