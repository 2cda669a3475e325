#include "daqflow/runtime/params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "daqflow/core/enum_names.hpp"
#include "runtime/param_check.hpp"

namespace daqflow::runtime {

std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

using nlohmann::json;

const char* to_string(ParamKind kind) {
  static constexpr auto kNames =
      core::enum_names<ParamKind>({{ParamKind::integer, "integer"},
                                   {ParamKind::number, "number"},
                                   {ParamKind::boolean, "boolean"},
                                   {ParamKind::string, "string"},
                                   {ParamKind::app_ref, "app_ref"},
                                   {ParamKind::app_ref_list, "app_ref_list"},
                                   {ParamKind::integer_list, "integer_list"},
                                   {ParamKind::object, "object"}});
  return kNames.name(kind, "unknown");
}

namespace detail {

namespace {

using Issues = std::vector<ParamIssue>;

void add_value_issue(Issues& issues, const std::string& path, std::string message) {
  issues.push_back({ParamIssue::Kind::value, path, {}, std::move(message)});
}

std::string expected(std::string_view what, const json& got) {
  return fmt::format("expected {}, got {}", what, describe(got));
}

// min/max are doubles in the spec; print 8 rather than 8.0 for the integer bounds people write.
std::string bound(double v) {
  return fmt::format("{}", v);
}

void check_bounds(const ParamSpec& spec, const json& value, const std::string& path,
                  Issues& issues) {
  const double v = value.get<double>();
  const bool below = spec.min && v < *spec.min;
  const bool above = spec.max && v > *spec.max;
  if (!below && !above) return;
  if (spec.min && spec.max) {
    add_value_issue(issues, path,
                    fmt::format("{} is out of range {}..{}", json_text(value), bound(*spec.min),
                                bound(*spec.max)));
  } else if (below) {
    add_value_issue(issues, path,
                    fmt::format("{} is below the minimum {}", json_text(value), bound(*spec.min)));
  } else {
    add_value_issue(issues, path,
                    fmt::format("{} is above the maximum {}", json_text(value), bound(*spec.max)));
  }
}

void check_integer(const ParamSpec& spec, const json& value, const std::string& path,
                   Issues& issues) {
  if (!value.is_number_integer()) {
    add_value_issue(issues, path, expected("an integer", value));
    return;
  }
  check_bounds(spec, value, path, issues);
}

// An app_ref may be empty only where the type says "no peer" is allowed (default "").
void check_app_ref(const ParamSpec& spec, const json& value, const std::string& path,
                   Issues& issues) {
  if (!value.is_string()) {
    add_value_issue(issues, path, expected("an application id", value));
  } else if (value.get_ref<const std::string&>().empty() && spec.default_json != "\"\"") {
    add_value_issue(issues, path, "expected an application id, got an empty string");
  }
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string join_path(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

std::string join_path(const std::string& path, std::size_t element) {
  return fmt::format("{}[{}]", path, element);
}

std::string join_names(const std::vector<std::string>& names) {
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string closest_name(std::string_view key, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = 3;  // more than two edits is another word, not a typo
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(key, c);
    if (d < best_distance && d < key.size()) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string expected_keys_hint(std::string_view key, const std::vector<std::string>& candidates) {
  if (candidates.empty()) return "no keys are allowed here";
  const std::string guess = closest_name(key, candidates);
  if (!guess.empty()) {
    return fmt::format("did you mean '{}'? expected one of: {}", guess, join_names(candidates));
  }
  return fmt::format("expected one of: {}", join_names(candidates));
}

std::string describe(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return fmt::format("boolean {}", json_text(value));
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return fmt::format("integer {}", json_text(value));
    case json::value_t::number_float:
      return fmt::format("number {}", json_text(value));
    case json::value_t::string:
      return fmt::format("string {}", json_text(value));
    case json::value_t::array:
      return "a list";
    case json::value_t::object:
      return "a mapping";
    default:
      return json_text(value);
  }
}

json check_param(const ParamSpec& spec, const json& value, const std::string& path,
                 Issues& issues) {
  // A default of null makes a parameter optional without a value; null is then accepted back.
  if (value.is_null() && spec.default_json == "null") return value;
  switch (spec.kind) {
    case ParamKind::integer:
      check_integer(spec, value, path, issues);
      break;
    case ParamKind::number:
      if (!value.is_number() || !std::isfinite(value.get<double>())) {
        add_value_issue(issues, path, expected("a number", value));
      } else {
        check_bounds(spec, value, path, issues);
      }
      break;
    case ParamKind::boolean:
      if (!value.is_boolean()) add_value_issue(issues, path, expected("true or false", value));
      break;
    case ParamKind::string:
      if (!value.is_string()) {
        add_value_issue(issues, path, expected("a string", value));
      } else if (!spec.choices.empty() &&
                 std::find(spec.choices.begin(), spec.choices.end(),
                           value.get_ref<const std::string&>()) == spec.choices.end()) {
        add_value_issue(
            issues, path,
            fmt::format("{} is not one of: {}", json_text(value), join_names(spec.choices)));
      }
      break;
    case ParamKind::app_ref:
      check_app_ref(spec, value, path, issues);
      break;
    case ParamKind::app_ref_list:
    case ParamKind::integer_list:
      if (!value.is_array()) {
        add_value_issue(issues, path, expected("a list", value));
        break;
      }
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (spec.kind == ParamKind::integer_list) {
          check_integer(spec, value[i], join_path(path, i), issues);
        } else if (!value[i].is_string() || value[i].get_ref<const std::string&>().empty()) {
          add_value_issue(issues, join_path(path, i), expected("an application id", value[i]));
        }
      }
      break;
    case ParamKind::object:
      if (!value.is_object() && !spec.migration.empty()) {
        add_value_issue(issues, path,
                        fmt::format("{} ({})", expected("a mapping", value), spec.migration));
        return value;
      }
      return check_fields(spec.fields, value, path, issues);
  }
  return value;
}

std::string unknown_param_hint(std::string_view key, const std::vector<ParamSpec>& fields,
                               const std::vector<std::string>& candidates) {
  for (const ParamSpec& f : fields) {
    if (std::find(f.replaces.begin(), f.replaces.end(), key) != f.replaces.end()) {
      return fmt::format("now part of '{}': {}", f.name, f.migration);
    }
  }
  return expected_keys_hint(key, candidates);
}

json check_fields(const std::vector<ParamSpec>& fields, const json& object, const std::string& path,
                  Issues& issues) {
  if (!object.is_object()) {
    add_value_issue(issues, path, expected("a mapping", object));
    return object;
  }
  std::vector<std::string> names;
  names.reserve(fields.size());
  for (const auto& f : fields) names.push_back(f.name);

  json out = json::object();
  for (const auto& [key, value] : object.items()) {
    const auto it = std::find_if(fields.begin(), fields.end(),
                                 [&key = key](const ParamSpec& f) { return f.name == key; });
    if (it == fields.end()) {
      issues.push_back(
          {ParamIssue::Kind::unknown_key, path, key, unknown_param_hint(key, fields, names)});
      continue;
    }
    out[key] = check_param(*it, value, join_path(path, key), issues);
  }
  for (const auto& f : fields) {
    if (object.contains(f.name)) continue;
    if (is_required(f)) {
      issues.push_back({ParamIssue::Kind::missing_key, path, f.name, {}});
      continue;
    }
    auto d = param_default(f);
    if (d) {
      out[f.name] = std::move(*d);
    } else {
      add_value_issue(issues, join_path(path, f.name), d.error().message());
    }
  }
  return out;
}

Result<json> param_default(const ParamSpec& spec) {
  if (is_required(spec))
    return Error(ErrorCode::internal, fmt::format("parameter '{}' has no default", spec.name));
  json parsed = json::parse(spec.default_json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return Error(ErrorCode::internal, fmt::format("the default of parameter '{}' is not JSON: {}",
                                                  spec.name, spec.default_json));
  }
  Issues issues;
  json filled = check_param(spec, parsed, "", issues);
  if (!issues.empty()) {
    return Error(ErrorCode::internal,
                 fmt::format("the default {} of parameter '{}' is invalid: {}", spec.default_json,
                             spec.name, issues.front().message));
  }
  return filled;
}

}  // namespace detail

namespace {

// Messages for a value given alone (check_param_value): paths are relative to the value.
std::string format_relative(const detail::ParamIssue& issue) {
  using Kind = detail::ParamIssue::Kind;
  const std::string at = issue.path.empty() ? "" : fmt::format("at '{}': ", issue.path);
  switch (issue.kind) {
    case Kind::unknown_key:
      return fmt::format("{}unknown key '{}' ({})", at, issue.key, issue.message);
    case Kind::missing_key:
      return fmt::format("{}missing required key '{}'", at, issue.key);
    case Kind::value:
      break;
  }
  return at + issue.message;
}

// Messages for a parameter object (validate_params): paths start with the parameter's name.
std::string format_named(const detail::ParamIssue& issue) {
  using Kind = detail::ParamIssue::Kind;
  switch (issue.kind) {
    case Kind::unknown_key:
      if (issue.path.empty()) {
        return fmt::format("unknown parameter '{}' ({})", issue.key, issue.message);
      }
      return fmt::format("parameter '{}': unknown key '{}' ({})", issue.path, issue.key,
                         issue.message);
    case Kind::missing_key:
      if (issue.path.empty()) return fmt::format("missing required parameter '{}'", issue.key);
      return fmt::format("parameter '{}': missing required key '{}'", issue.path, issue.key);
    case Kind::value:
      break;
  }
  return fmt::format("parameter '{}': {}", issue.path, issue.message);
}

}  // namespace

Result<void> check_param_value(const ParamSpec& spec, const json& value) {
  std::vector<detail::ParamIssue> issues;
  (void)detail::check_param(spec, value, "", issues);
  if (issues.empty()) return ok();
  std::vector<std::string> lines;
  for (const auto& issue : issues) lines.push_back(format_relative(issue));
  return Error(fmt::format("{}", fmt::join(lines, "\n")));
}

Result<json> validate_params(const std::vector<ParamSpec>& specs, const json& params) {
  if (!params.is_object()) {
    return Error(fmt::format("parameters must be a JSON object, got {}", detail::describe(params)));
  }
  std::vector<detail::ParamIssue> issues;
  json out = detail::check_fields(specs, params, "", issues);
  if (issues.empty()) return out;
  std::vector<std::string> lines;
  for (const auto& issue : issues) lines.push_back(format_named(issue));
  return Error(fmt::format("{}", fmt::join(lines, "\n")));
}

}  // namespace daqflow::runtime

namespace daqflow::runtime {

namespace {

ParamSpec make_spec(std::string name, ParamKind kind, std::string help) {
  ParamSpec s;
  s.name = std::move(name);
  s.kind = kind;
  s.help = std::move(help);
  return s;
}

}  // namespace

ParamSpec ParamSpec::integer(std::string name, std::string help) {
  return make_spec(std::move(name), ParamKind::integer, std::move(help));
}
ParamSpec ParamSpec::number(std::string name, std::string help) {
  return make_spec(std::move(name), ParamKind::number, std::move(help));
}
ParamSpec ParamSpec::boolean(std::string name, std::string help) {
  return make_spec(std::move(name), ParamKind::boolean, std::move(help));
}
ParamSpec ParamSpec::string(std::string name, std::string help) {
  return make_spec(std::move(name), ParamKind::string, std::move(help));
}
ParamSpec ParamSpec::app_ref(std::string name, std::string help) {
  return make_spec(std::move(name), ParamKind::app_ref, std::move(help));
}
ParamSpec ParamSpec::app_ref_list(std::string name, std::string help) {
  return make_spec(std::move(name), ParamKind::app_ref_list, std::move(help));
}
ParamSpec ParamSpec::integer_list(std::string name, std::string help) {
  return make_spec(std::move(name), ParamKind::integer_list, std::move(help));
}
ParamSpec ParamSpec::object(std::string name, std::string help, std::vector<ParamSpec> fields) {
  ParamSpec s = make_spec(std::move(name), ParamKind::object, std::move(help));
  s.fields = std::move(fields);
  s.default_json = "{}";
  return s;
}

ParamSpec&& ParamSpec::default_value(std::int64_t v) && {
  default_json = json(v).dump();
  return std::move(*this);
}
ParamSpec&& ParamSpec::default_value(double v) && {
  default_json = json(v).dump();
  return std::move(*this);
}
ParamSpec&& ParamSpec::default_value(bool v) && {
  default_json = json(v).dump();
  return std::move(*this);
}
ParamSpec&& ParamSpec::default_value(const char* v) && {
  default_json = json(v).dump();
  return std::move(*this);
}
ParamSpec&& ParamSpec::default_json_text(std::string text) && {
  default_json = std::move(text);
  return std::move(*this);
}
ParamSpec&& ParamSpec::range(double lo, double hi) && {
  min = lo;
  max = hi;
  return std::move(*this);
}
ParamSpec&& ParamSpec::at_least(double lo) && {
  min = lo;
  return std::move(*this);
}
ParamSpec&& ParamSpec::one_of(std::vector<std::string> values) && {
  choices = std::move(values);
  return std::move(*this);
}

ParamSpec&& ParamSpec::replacing(std::vector<std::string> old_keys, std::string how) && {
  replaces = std::move(old_keys);
  migration = std::move(how);
  return std::move(*this);
}

ParamReader::ParamReader(const json& params, std::string owner, std::string noun)
    : ParamReader(&params, std::move(owner), std::move(noun), "", nullptr) {}

ParamReader::ParamReader(const json* params, std::string owner, std::string noun, std::string path,
                         std::optional<Error>* first)
    : params_(params),
      owner_(std::move(owner)),
      noun_(std::move(noun)),
      path_(std::move(path)),
      first_(first != nullptr ? first : &own_first_) {}

Error ParamReader::error(std::string_view key, std::string_view what) const {
  std::string text = fmt::format("{} '{}{}': {}", noun_, path_, key, what);
  return Error(ErrorCode::invalid_argument,
               owner_.empty() ? std::move(text) : owner_ + ": " + text);
}

void ParamReader::note(std::string_view key, std::string_view what) {
  if (!first_->has_value()) *first_ = error(key, what);
}

Result<void> ParamReader::status() const {
  if (first_->has_value()) return **first_;
  return ok();
}

const json* ParamReader::find(std::string_view key) {
  if (params_ == nullptr || !params_->is_object()) {
    note(key, "not a mapping");
    return nullptr;
  }
  const auto it = params_->find(key);
  if (it == params_->end()) {
    note(key, "missing");
    return nullptr;
  }
  return &*it;
}

ParamReader ParamReader::object(std::string_view key) {
  const json* v = find(key);
  if (v != nullptr && !v->is_object()) {
    note(key, "expected a mapping, got " + detail::describe(*v));
    v = nullptr;
  }
  return ParamReader(v, owner_, noun_, path_ + std::string(key) + ".", first_);
}

namespace {

// Converts a JSON value to T, or says what was expected.
template <typename T>
std::optional<T> convert(const json& v, std::string& expected);

template <>
std::optional<bool> convert(const json& v, std::string& expected) {
  if (v.is_boolean()) return v.get<bool>();
  expected = "true or false";
  return std::nullopt;
}

template <>
std::optional<std::int64_t> convert(const json& v, std::string& expected) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  expected = "an integer";
  return std::nullopt;
}

template <typename U>
std::optional<U> convert_unsigned(const json& v, std::string& expected) {
  if (v.is_number_integer()) {
    const auto n = v.get<std::int64_t>();
    if (n >= 0 && static_cast<std::uint64_t>(n) <= std::numeric_limits<U>::max()) {
      return static_cast<U>(n);
    }
  }
  expected = fmt::format("an integer in 0..{}", std::numeric_limits<U>::max());
  return std::nullopt;
}

template <>
std::optional<std::uint32_t> convert(const json& v, std::string& expected) {
  return convert_unsigned<std::uint32_t>(v, expected);
}

template <>
std::optional<std::uint64_t> convert(const json& v, std::string& expected) {
  return convert_unsigned<std::uint64_t>(v, expected);
}

template <>
std::optional<double> convert(const json& v, std::string& expected) {
  if (v.is_number()) return v.get<double>();
  expected = "a number";
  return std::nullopt;
}

template <>
std::optional<std::string> convert(const json& v, std::string& expected) {
  if (v.is_string()) return v.get<std::string>();
  expected = "a string";
  return std::nullopt;
}

template <>
std::optional<std::vector<std::string>> convert(const json& v, std::string& expected) {
  if (v.is_array() &&
      std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_string(); })) {
    return v.get<std::vector<std::string>>();
  }
  expected = "a list of strings";
  return std::nullopt;
}

template <>
std::optional<std::vector<std::int64_t>> convert(const json& v, std::string& expected) {
  if (v.is_array() &&
      std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number_integer(); })) {
    return v.get<std::vector<std::int64_t>>();
  }
  expected = "a list of integers";
  return std::nullopt;
}

template <>
std::optional<std::optional<std::int64_t>> convert(const json& v, std::string& expected) {
  if (v.is_null()) return std::optional<std::int64_t>{};
  if (v.is_number_integer()) return std::optional<std::int64_t>{v.get<std::int64_t>()};
  expected = "an integer or null";
  return std::nullopt;
}

template <>
std::optional<json> convert(const json& v, std::string&) {
  return v;
}

}  // namespace

template <typename T>
T ParamReader::get(std::string_view key) {
  const json* v = find(key);
  if (v == nullptr) return T{};
  std::string expected;
  auto converted = convert<T>(*v, expected);
  if (!converted) {
    note(key, fmt::format("expected {}, got {}", expected, detail::describe(*v)));
    return T{};
  }
  return std::move(*converted);
}

template bool ParamReader::get<bool>(std::string_view);
template std::int64_t ParamReader::get<std::int64_t>(std::string_view);
template std::uint32_t ParamReader::get<std::uint32_t>(std::string_view);
template std::uint64_t ParamReader::get<std::uint64_t>(std::string_view);
template double ParamReader::get<double>(std::string_view);
template std::string ParamReader::get<std::string>(std::string_view);
template std::vector<std::string> ParamReader::get<std::vector<std::string>>(std::string_view);
template std::vector<std::int64_t> ParamReader::get<std::vector<std::int64_t>>(std::string_view);
template std::optional<std::int64_t> ParamReader::get<std::optional<std::int64_t>>(
    std::string_view);
template json ParamReader::get<json>(std::string_view);

}  // namespace daqflow::runtime
