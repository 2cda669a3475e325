// YAML nodes -> typed values with their positions, and the error collector of the loader.
#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <sstream>
#include <tuple>

#include "runtime/config_parse.hpp"
#include "runtime/param_check.hpp"

namespace daqflow::runtime {

std::string SourceLocation::str() const {
  if (line <= 0) return file;
  return fmt::format("{}:{}:{}", file, line, column);
}

namespace detail {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxReported = 100;

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

json scalar_to_json(const std::string& text, ParamKind kind) {
  switch (kind) {
    case ParamKind::integer:
      if (auto v = parse_integer(text)) return *v;
      break;
    case ParamKind::number:
      if (auto v = parse_integer(text)) return *v;
      if (auto v = parse_number(text)) return *v;
      break;
    case ParamKind::boolean:
      if (auto v = parse_boolean(text)) return *v;
      break;
    default:
      break;
  }
  // Kept as text: check_param() then says what kind was expected and shows what was written.
  return text;
}

// kind guides scalars; fields are the known keys of a mapping (none for free-form values).
json convert(const YAML::Node& node, ParamKind kind, const std::vector<ParamSpec>* fields,
             const std::string& path, AppMarks& marks, Diagnostics& d) {
  marks.values[path] = node.Mark();
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return scalar_to_json(node.Scalar(), kind);
    case YAML::NodeType::Sequence: {
      const ParamKind element =
          kind == ParamKind::integer_list ? ParamKind::integer : ParamKind::string;
      json array = json::array();
      for (std::size_t i = 0; i < node.size(); ++i) {
        array.push_back(convert(node[i], element, nullptr, join_path(path, i), marks, d));
      }
      return array;
    }
    case YAML::NodeType::Map: {
      json object = json::object();
      for (const Field& f : fields_of(node, fmt::format("parameter '{}'", path), d)) {
        const std::string sub = join_path(path, f.key);
        marks.keys[sub] = f.key_node.Mark();
        const ParamSpec* spec = nullptr;
        if (fields != nullptr && kind == ParamKind::object) {
          auto it = std::find_if(fields->begin(), fields->end(),
                                 [&](const ParamSpec& s) { return s.name == f.key; });
          if (it != fields->end()) spec = &*it;
        }
        object[f.key] = spec != nullptr
                            ? convert(f.value, spec->kind, &spec->fields, sub, marks, d)
                            : convert(f.value, ParamKind::string, nullptr, sub, marks, d);
      }
      return object;
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return nullptr;
}

// Notes where each document starts and nothing else.
class DocumentStarts final : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;

  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

std::optional<YAML::Node> load_document(const std::string& text, Diagnostics& d) {
  try {
    // yaml-cpp 0.7's LoadAll() never returns on a stray ',' where a document should start
    // (fixed upstream by jbeder/yaml-cpp#1319): its parser reports an empty document without
    // consuming the token, again and again. So documents are counted here, at most two, and a
    // parser that makes no progress is a syntax error; then only the first is loaded.
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts documents;
    while (documents.starts.size() < 2 && parser.HandleNextDocument(documents)) {
    }
    const auto& starts = documents.starts;
    if (starts.size() == 2 && starts[1].pos == starts[0].pos) {
      const auto at = static_cast<std::size_t>(starts[0].pos);
      d.error(starts[0], fmt::format("YAML syntax error: unexpected '{}'",
                                     at < text.size() ? text.substr(at, 1) : std::string()));
      return std::nullopt;
    }
    YAML::Node root = YAML::Load(text);
    if (starts.empty() || (starts.size() == 1 && root.IsNull())) {
      d.error(YAML::Mark(),
              "the configuration is empty: it needs at least 'contexts' (see "
              "docs/configuration.md)");
      return std::nullopt;
    }
    if (starts.size() > 1) {
      d.error(starts[1], "a configuration is one YAML document; this is a second one");
    }
    return root;
  } catch (const YAML::Exception& e) {
    d.error(e.mark, "YAML syntax error: " + e.msg);
    return std::nullopt;
  }
}

void Diagnostics::error(const YAML::Mark& mark, std::string message) {
  if (mark.is_null()) {
    entries_.push_back({0, 0, fmt::format("{}: {}", file_, message)});
    return;
  }
  entries_.push_back(
      {mark.line + 1, mark.column + 1, fmt::format("{}: {}", location(mark).str(), message)});
}

SourceLocation Diagnostics::location(const YAML::Mark& mark) const {
  if (mark.is_null()) return {file_, 0, 0};
  return {file_, mark.line + 1, mark.column + 1};
}

Error Diagnostics::to_error() const {
  std::vector<const Entry*> sorted;
  for (const auto& e : entries_) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
    return std::tie(a->line, a->column) < std::tie(b->line, b->column);
  });
  std::string text;
  for (std::size_t i = 0; i < sorted.size() && i < kMaxReported; ++i) {
    if (i > 0) text += '\n';
    text += sorted[i]->text;
  }
  if (sorted.size() > kMaxReported) {
    text += fmt::format("\n{}: ... and {} more errors", file_, sorted.size() - kMaxReported);
  }
  return Error(std::move(text));
}

std::vector<Field> fields_of(const YAML::Node& mapping, const std::string& where, Diagnostics& d) {
  std::vector<Field> fields;
  for (auto it = mapping.begin(); it != mapping.end(); ++it) {
    if (!it->first.IsScalar()) {
      d.error(it->first.Mark(),
              fmt::format("keys in {} must be names, got {}", where, describe_node(it->first)));
      continue;
    }
    const std::string& key = it->first.Scalar();
    auto first =
        std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.key == key; });
    if (first != fields.end()) {
      d.error(it->first.Mark(), fmt::format("duplicate key '{}' in {} (first given at line {})",
                                            key, where, first->key_node.Mark().line + 1));
      continue;
    }
    fields.push_back({key, it->first, it->second});
  }
  return fields;
}

std::optional<long long> parse_integer(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  unsigned long long magnitude = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), magnitude, base);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  constexpr auto kMax = static_cast<unsigned long long>(LLONG_MAX);
  if (negative) {
    if (magnitude > kMax + 1) return std::nullopt;
    return magnitude == kMax + 1 ? LLONG_MIN : -static_cast<long long>(magnitude);
  }
  if (magnitude > kMax) return std::nullopt;
  return static_cast<long long>(magnitude);
}

std::optional<double> parse_number(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

std::optional<bool> parse_boolean(std::string_view text) {
  for (const char* t : {"true", "yes", "on"}) {
    if (equals_ignoring_case(text, t)) return true;
  }
  for (const char* f : {"false", "no", "off"}) {
    if (equals_ignoring_case(text, f)) return false;
  }
  return std::nullopt;
}

std::string describe_node(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return fmt::format("'{}'", node.Scalar());
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

YAML::Mark AppMarks::value_mark(std::string path) const {
  for (;;) {
    if (auto it = values.find(path); it != values.end()) return it->second;
    const auto cut = path.find_last_of(".[");
    if (cut == std::string::npos) return node;
    path.resize(cut);
  }
}

YAML::Mark AppMarks::key_mark(const std::string& path) const {
  if (auto it = keys.find(path); it != keys.end()) return it->second;
  return value_mark(path);
}

json yaml_to_json(const YAML::Node& node, const ParamSpec* spec, const std::string& path,
                  AppMarks& marks, Diagnostics& d) {
  if (spec == nullptr) return convert(node, ParamKind::string, nullptr, path, marks, d);
  return convert(node, spec->kind, &spec->fields, path, marks, d);
}

std::vector<std::pair<std::string, std::string>> named_ids(const json& params,
                                                           const std::string& name) {
  std::vector<std::pair<std::string, std::string>> ids;
  const auto it = params.find(name);
  if (it == params.end()) return ids;
  if (it->is_string() && !it->get_ref<const std::string&>().empty()) {
    ids.emplace_back(name, it->get<std::string>());
  } else if (it->is_array()) {
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& element = (*it)[i];
      if (element.is_string() && !element.get_ref<const std::string&>().empty()) {
        ids.emplace_back(join_path(name, i), element.get<std::string>());
      }
    }
  }
  return ids;
}

bool valid_name(std::string_view name) {
  // Names become parts of file and segment names: nothing that could climb out of a directory.
  return !name.empty() && name.find("..") == std::string_view::npos &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
         });
}

std::string canonical_host(const std::string& host) {
  return equals_ignoring_case(host, "localhost") ? std::string("127.0.0.1") : host;
}

}  // namespace detail
}  // namespace daqflow::runtime
