#pragma once
// Application parameters: each application type declares its parameters (name, kind, default,
// bounds) once, in its spec; the configuration loader and the control API validate values
// against it and fill in the defaults, so that an application reads only checked values.
//
//   ParamSpec::integer("message_size", "payload bytes per message")
//       .default_value(1048576)
//       .range(0, kMaxMessageSize)
//
// An application reads its parameters with a ParamReader (AppContext::param_reader()): typed
// values, and an error naming the application and the key when one is missing or of the wrong
// type (which only a bug can cause once the spec has been checked).

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/result.hpp"

namespace daqflow::runtime {

// A JSON value as text for a message: bytes that are not UTF-8 (a configuration or a request
// may hold any) are replaced, never thrown about.
[[nodiscard]] std::string json_text(const nlohmann::json& value);

enum class ParamKind {
  integer,  // JSON integer within [min, max]
  number,   // JSON number within [min, max]
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
  // What this parameter took over from an older form: the keys it replaced, and how the old
  // forms are written now (errors about them, and about a scalar where a mapping is due, say
  // it).
  std::vector<std::string> replaces;
  std::string migration;

  // A required parameter of each kind; the builders below add a default and bounds.
  static ParamSpec integer(std::string name, std::string help);
  static ParamSpec number(std::string name, std::string help);
  static ParamSpec boolean(std::string name, std::string help);
  static ParamSpec string(std::string name, std::string help);
  static ParamSpec app_ref(std::string name, std::string help);
  static ParamSpec app_ref_list(std::string name, std::string help);
  static ParamSpec integer_list(std::string name, std::string help);
  // An object defaults to {} with its fields' defaults.
  static ParamSpec object(std::string name, std::string help, std::vector<ParamSpec> fields);

  ParamSpec&& default_value(std::int64_t v) &&;
  ParamSpec&& default_value(int v) && { return std::move(*this).default_value(std::int64_t{v}); }
  ParamSpec&& default_value(double v) &&;
  ParamSpec&& default_value(bool v) &&;
  ParamSpec&& default_value(const char* v) &&;
  // Lists, objects and null (optional without a value): the default as JSON text.
  ParamSpec&& default_json_text(std::string json) &&;
  ParamSpec&& range(double lo, double hi) &&;
  ParamSpec&& at_least(double lo) &&;
  ParamSpec&& one_of(std::vector<std::string> values) &&;
  ParamSpec&& replacing(std::vector<std::string> old_keys, std::string how) &&;
};

[[nodiscard]] const char* to_string(ParamKind kind);

// Checks one value against its spec; the error says what is wrong (without the name).
[[nodiscard]] Result<void> check_param_value(const ParamSpec& spec, const nlohmann::json& value);

// Validates a whole parameter object against specs: unknown keys, kinds, bounds, required keys;
// returns the object with defaults filled in. Used by PUT /params (the loader reports YAML
// positions itself, with the same checks).
[[nodiscard]] Result<nlohmann::json> validate_params(const std::vector<ParamSpec>& specs,
                                                     const nlohmann::json& params);

// Reads typed values from a validated parameter object (or any JSON object whose keys must be
// there, such as an application's results). get<T>() returns T{} on a missing or
// ill-typed key and keeps the first such error, so that configure() reads every parameter and
// checks status() once. T is bool, std::int64_t, std::uint32_t, std::uint64_t, double,
// std::string, std::vector<std::string>, std::vector<std::int64_t>, std::optional<std::int64_t>
// (null: none) or nlohmann::json (any value).
//
// Not thread-safe; the parameter object must outlive the reader.
class ParamReader {
 public:
  // owner names whose parameters these are in errors: "application 'bu1'" (none for an
  // application's own parameters read in configure(): its host names it); noun what the keys
  // are ("parameter", or "result" for an application's results read by `daqflow bench`).
  ParamReader(const nlohmann::json& params, std::string owner, std::string noun = "parameter");
  // The reader keeps a pointer to params: a temporary would be gone before the first get().
  ParamReader(const nlohmann::json&& params, std::string owner,
              std::string noun = "parameter") = delete;
  // Returned by value only (guaranteed elision): first_ may point into the reader itself.
  ParamReader(const ParamReader&) = delete;
  ParamReader& operator=(const ParamReader&) = delete;

  template <typename T>
  [[nodiscard]] T get(std::string_view key);
  // The fields of an object parameter, read with the same first-error slot ("output.kind").
  [[nodiscard]] ParamReader object(std::string_view key);

  // The first error, if any.
  [[nodiscard]] Result<void> status() const;
  // An error about one parameter, for checks across parameters that the spec cannot express.
  [[nodiscard]] Error error(std::string_view key, std::string_view what) const;

 private:
  ParamReader(const nlohmann::json* params, std::string owner, std::string noun, std::string path,
              std::optional<Error>* first);
  [[nodiscard]] const nlohmann::json* find(std::string_view key);
  void note(std::string_view key, std::string_view what);

  const nlohmann::json* params_;
  std::string owner_;
  std::string noun_;
  std::string path_;  // "output." for a nested reader
  std::optional<Error> own_first_;
  std::optional<Error>* first_;  // own_first_, or the parent's
};

}  // namespace daqflow::runtime
