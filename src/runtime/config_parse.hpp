#pragma once
// Private parts of the configuration loader, shared by its three steps:
//   config_yaml.cpp   YAML scalars and mappings -> typed values, with positions
//   config_parse*.cpp the document -> the ClusterConfig model, key by key (config_reader.hpp)
//   config_check.cpp  checks between parts: duplicates, ports, references, links
// Every step reports to one Diagnostics so that a person sees all the errors of a file at once,
// each as "file:line:column: message".

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::runtime::detail {

class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}

  void error(const YAML::Mark& mark, std::string message);
  [[nodiscard]] SourceLocation location(const YAML::Mark& mark) const;
  [[nodiscard]] bool empty() const { return entries_.empty(); }
  // All errors in file order, one a line.
  [[nodiscard]] Error to_error() const;

 private:
  struct Entry {
    int line;
    int column;
    std::string text;
  };
  std::string file_;
  std::vector<Entry> entries_;
};

// One key of a YAML mapping, with the positions of the key and of its value.
struct Field {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};

// The keys of a mapping in file order. Reports (and drops) keys that are not scalars and keys
// given twice; `where` names the mapping in messages ("transports", "context 'src'").
std::vector<Field> fields_of(const YAML::Node& mapping, const std::string& where, Diagnostics& d);

// Strict scalar conversions: decimal integers (or 0x hex), finite numbers, YAML booleans.
std::optional<long long> parse_integer(std::string_view text);
std::optional<double> parse_number(std::string_view text);
std::optional<bool> parse_boolean(std::string_view text);

// A scalar's text for messages: "\"abc\"", or "a list" / "a mapping" / "null".
std::string describe_node(const YAML::Node& node);

// Positions of one application's parts, kept for the checks between parts.
struct AppMarks {
  YAML::Mark node;  // the application's mapping
  YAML::Mark id;
  YAML::Mark transport;  // the transport key's value, or the mapping when defaulted
  std::map<std::string, YAML::Mark> values;  // parameter path ("output.kind") -> its value
  std::map<std::string, YAML::Mark> keys;    // parameter path -> its key

  // The position of the value at path, or of its closest enclosing value.
  [[nodiscard]] YAML::Mark value_mark(std::string path) const;
  [[nodiscard]] YAML::Mark key_mark(const std::string& path) const;
};

struct ContextMarks {
  YAML::Mark node;
  YAML::Mark name;
  YAML::Mark control_port;
  YAML::Mark data_port;  // the data_port key's value, or control_port's when defaulted
  bool ports_valid = false;
  bool control_bind_given = false;
};

// One fault of the `faults` section: the ids its link names, resolved by check_cluster().
struct FaultMarks {
  std::string from;
  std::string to;
  YAML::Mark node;
  YAML::Mark from_mark;
  YAML::Mark to_mark;
};

struct ParsedConfig {
  ClusterConfig config;
  std::vector<ContextMarks> contexts;  // parallel to config.contexts
  std::vector<AppMarks> apps;          // parallel to config.applications
  std::vector<FaultMarks> faults;      // parallel to config.faults
};

// Converts a parameter value to JSON guided by its spec (spec may be null for keys that have
// none), recording the positions of every value and key under path in marks.
nlohmann::json yaml_to_json(const YAML::Node& node, const ParamSpec* spec, const std::string& path,
                            AppMarks& marks, Diagnostics& d);

// The configuration's one YAML document; reports syntax errors, an empty text and a second
// document, and returns nothing where the text cannot be read.
std::optional<YAML::Node> load_document(const std::string& text, Diagnostics& d);

// Reads the document into parsed, reporting what is wrong key by key. extensible: the registry
// (the same object) that takes the types of the configuration's `libraries`; nullptr: a
// configuration that names libraries is refused.
void read_document(const YAML::Node& root, const AppRegistry& registry, AppRegistry* extensible,
                   ParsedConfig& parsed, Diagnostics& d);

// The checks between parts; needs read_document's result.
void check_cluster(const AppRegistry& registry, ParsedConfig& parsed, Diagnostics& d);

// The application ids a peer parameter names, with their paths ("peers[1]"): a string or a list
// of strings; anything else names none.
std::vector<std::pair<std::string, std::string>> named_ids(const nlohmann::json& params,
                                                           const std::string& name);

// Application and context names: [A-Za-z0-9_.-]+
bool valid_name(std::string_view name);

// Hosts compared for port collisions and inproc links ("localhost" is 127.0.0.1).
std::string canonical_host(const std::string& host);

}  // namespace daqflow::runtime::detail
