// The configuration's contexts, their restart and expendability, and their applications with
// their parameters (config_reader.hpp).

#include <algorithm>

#include "runtime/config_reader.hpp"

namespace daqflow::runtime::detail {

void Reader::restart_policy(const Field& f, const std::string& where, RestartPolicy& r) {
  const std::vector<std::string> policies{"never", "on-failure"};
  if (f.value.IsScalar()) {
    if (auto v = choice(f, where, policies)) r.on_failure = *v == "on-failure";
    return;
  }
  if (!f.value.IsMap()) {
    d_.error(f.value.Mark(), fmt::format("'restart' in {}: expected never, on-failure or a "
                                         "mapping with {}, got {}",
                                         where, join_names(kRestartKeys), describe_node(f.value)));
    return;
  }
  const std::string inner = "restart of " + where;
  bool policy_given = false;
  for (const Field& g : fields_of(f.value, inner, d_)) {
    if (g.key == "policy") {
      policy_given = true;
      if (auto v = choice(g, inner, policies)) r.on_failure = *v == "on-failure";
    } else if (g.key == "backoff_ms") {
      if (auto v = integer(g, inner, 0, 600000)) r.backoff_ms = static_cast<std::uint32_t>(*v);
    } else if (g.key == "max_backoff_ms") {
      if (auto v = integer(g, inner, 0, 3600000)) r.max_backoff_ms = static_cast<std::uint32_t>(*v);
    } else if (g.key == "max_restarts") {
      if (auto v = integer(g, inner, 0, 1000000)) r.max_restarts = static_cast<std::uint32_t>(*v);
    } else {
      unknown_key(g, inner, kRestartKeys);
    }
  }
  if (!policy_given) {
    d_.error(f.value.Mark(), fmt::format("missing required key 'policy' in {} (never or "
                                         "on-failure)",
                                         inner));
  }
  if (r.max_backoff_ms < r.backoff_ms) {
    d_.error(f.value.Mark(), fmt::format("{}: max_backoff_ms {} is below backoff_ms {}", inner,
                                         r.max_backoff_ms, r.backoff_ms));
  }
}

void Reader::expendability(const Field& f, const std::string& where, Expendability& e) {
  if (f.value.IsScalar()) {
    const auto v = parse_boolean(f.value.Scalar());
    if (v) {
      e.expendable = *v;
    } else {
      d_.error(f.value.Mark(), fmt::format("'expendable' in {}: expected true, false or "
                                           "{{group, min}}, got {}",
                                           where, describe_node(f.value)));
    }
    return;
  }
  if (!f.value.IsMap()) {
    d_.error(f.value.Mark(), fmt::format("'expendable' in {}: expected true, false or "
                                         "{{group, min}}, got {}",
                                         where, describe_node(f.value)));
    return;
  }
  e.expendable = true;
  const std::string inner = "expendable of " + where;
  for (const Field& g : fields_of(f.value, inner, d_)) {
    if (g.key == "group") {
      if (auto v = name(g, inner)) e.group = *v;
    } else if (g.key == "min") {
      if (auto v = integer(g, inner, 0, 100000)) e.min = static_cast<std::uint32_t>(*v);
    } else {
      unknown_key(g, inner, kExpendableKeys);
    }
  }
  if (e.group.empty()) {
    d_.error(f.value.Mark(), fmt::format("missing required key 'group' in {} (the contexts "
                                         "counted together for min)",
                                         inner));
  }
}

void Reader::contexts(const Field& section) {
  if (!section.value.IsSequence() || section.value.size() == 0) {
    d_.error(section.value.Mark(), fmt::format("'contexts' must be a list of at least one "
                                               "context, got {}",
                                               describe_node(section.value)));
    return;
  }
  for (std::size_t i = 0; i < section.value.size(); ++i) context(section.value[i], i);
}

std::optional<std::string> Reader::address(const Field& f, const std::string& where) {
  auto v = text(f, where);
  if (!v) return std::nullopt;
  if (is_ip_address(*v)) return v;
  d_.error(f.value.Mark(), fmt::format("'{}' in {}: '{}' is not an IPv4 or IPv6 address (e.g. "
                                       "0.0.0.0 for every interface, 127.0.0.1 for this host "
                                       "only)",
                                       f.key, where, *v));
  return std::nullopt;
}

std::optional<std::string> Reader::item_name(const std::vector<Field>& fields, const char* key,
                                             const YAML::Node& node, const char* kind,
                                             std::string& where, YAML::Mark& mark) {
  const Field* f = find_field(fields, key);
  if (f == nullptr) {
    d_.error(node.Mark(), fmt::format("missing required key '{}' in {}", key, where));
    return std::nullopt;
  }
  mark = f->value.Mark();
  auto v = name(*f, where);
  if (v) where = fmt::format("{} '{}'", kind, *v);
  return v;
}

void Reader::context(const YAML::Node& node, std::size_t position) {
  std::string where = fmt::format("context #{}", position + 1);
  if (!node.IsMap()) {
    d_.error(node.Mark(), fmt::format("{} must be a mapping with at least name, control_port "
                                      "and applications, got {}",
                                      where, describe_node(node)));
    return;
  }
  ContextConfig ctx;
  ContextMarks marks;
  marks.node = node.Mark();
  ctx.location = d_.location(node.Mark());
  const auto fields = fields_of(node, where, d_);
  if (auto v = item_name(fields, "name", node, "context", where, marks.name)) ctx.name = *v;

  bool control_ok = false;
  bool data_given = false;
  bool data_ok = false;
  const Field* applications = nullptr;
  for (const Field& f : fields) {
    if (f.key == "name") continue;
    if (f.key == "host") {
      if (auto v = text(f, where)) ctx.host = *v;
    } else if (f.key == "control_bind") {
      marks.control_bind_given = true;
      if (auto v = address(f, where)) ctx.control_bind = *v;
    } else if (f.key == "control_port") {
      marks.control_port = f.value.Mark();
      if (auto v = integer(f, where, 1, kMaxPort)) {
        ctx.control_port = static_cast<std::uint16_t>(*v);
        control_ok = true;
      }
    } else if (f.key == "data_port") {
      marks.data_port = f.value.Mark();
      data_given = true;
      if (auto v = integer(f, where, 1, kMaxPort)) {
        ctx.data_port = static_cast<std::uint16_t>(*v);
        data_ok = true;
      }
    } else if (f.key == "restart") {
      restart_policy(f, where, ctx.restart);
    } else if (f.key == "expendable") {
      expendability(f, where, ctx.expendable);
    } else if (f.key == "applications") {
      applications = &f;
    } else {
      unknown_key(f, where, kContextKeys);
    }
  }
  if (find_field(fields, "control_port") == nullptr) {
    d_.error(node.Mark(), fmt::format("missing required key 'control_port' in {}", where));
  }
  if (!data_given && control_ok) {
    marks.data_port = marks.control_port;
    if (ctx.control_port + 1000 > kMaxPort) {
      d_.error(marks.control_port,
               fmt::format("{}: the default data port (control_port + 1000 = {}) is above {}; "
                           "set data_port",
                           where, ctx.control_port + 1000, kMaxPort));
    } else {
      ctx.data_port = static_cast<std::uint16_t>(ctx.control_port + 1000);
      data_ok = true;
    }
  }
  marks.ports_valid = control_ok && data_ok;

  const std::size_t index = parsed_.config.contexts.size();
  parsed_.config.contexts.push_back(std::move(ctx));
  parsed_.contexts.push_back(marks);
  if (applications == nullptr) {
    d_.error(node.Mark(), fmt::format("missing required key 'applications' in {} (write [] "
                                      "for none)",
                                      where));
    return;
  }
  if (!applications->value.IsSequence()) {
    d_.error(applications->value.Mark(),
             fmt::format("'applications' in {}: expected a list of applications, got {} "
                         "(write [] for none)",
                         where, describe_node(applications->value)));
    return;
  }
  for (std::size_t i = 0; i < applications->value.size(); ++i) {
    application(applications->value[i], index, where, i);
  }
  check_port_range(index, where);
}

void Reader::check_port_range(std::size_t index, const std::string& where) {
  ContextConfig& ctx = parsed_.config.contexts[index];
  ContextMarks& marks = parsed_.contexts[index];
  const long long last =
      static_cast<long long>(ctx.data_port) + static_cast<long long>(ctx.applications.size()) - 1;
  if (marks.ports_valid && last > kMaxPort) {
    d_.error(marks.data_port,
             fmt::format("{}: the data ports of its {} applications "
                         "({}..{}) go past {}",
                         where, ctx.applications.size(), ctx.data_port, last, kMaxPort));
    marks.ports_valid = false;
  }
}

void Reader::application(const YAML::Node& node, std::size_t context_index,
                         const std::string& context_where, std::size_t position) {
  const std::string& context_name = parsed_.config.contexts[context_index].name;
  std::string where = fmt::format("application #{} of {}", position + 1, context_where);
  if (!node.IsMap()) {
    d_.error(node.Mark(), fmt::format("{} must be a mapping with at least type and id, got {}",
                                      where, describe_node(node)));
    return;
  }
  ApplicationConfig app;
  AppMarks marks;
  marks.node = node.Mark();
  marks.transport = node.Mark();
  app.index = static_cast<AppIndex>(parsed_.config.applications.size());
  app.context = context_name;
  app.transport = parsed_.config.transports.default_transport;
  app.location = d_.location(node.Mark());
  app.params = json::object();

  const auto fields = fields_of(node, where, d_);
  if (auto v = item_name(fields, "id", node, "application", where, marks.id)) app.id = *v;
  const AppType* type = nullptr;
  if (const Field* f = find_field(fields, "type")) {
    if (auto v = text(*f, where)) {
      app.type = *v;
      type = registry_.find(*v);
      if (type == nullptr) {
        const auto known = registry_.names();
        d_.error(f->value.Mark(),
                 fmt::format("{}: unknown application type '{}' (known "
                             "types: {}){}",
                             where, *v, join_names(known), did_you_mean(*v, known)));
      }
    }
  } else {
    d_.error(node.Mark(), fmt::format("missing required key 'type' in {}", where));
  }

  for (const Field& f : fields) {
    if (f.key == "id" || f.key == "type") continue;
    if (f.key == "transport") {
      marks.transport = f.value.Mark();
      if (auto v = choice(f, where, transports_)) app.transport = *v;
    } else if (f.key == "cpu") {
      if (auto v = integer(f, where, 0, kMaxPort)) app.cpu = static_cast<int>(*v);
    } else if (f.key == "idle") {
      if (auto v = choice(f, where, kIdleStrategies)) app.idle = *v;
    } else if (type != nullptr) {
      parameter(f, *type, where, app, marks);
    }
    // Without a known type there is no telling a parameter from a typo: the type's error,
    // reported above, is the one to fix first.
  }
  if (type != nullptr) defaults(*type, where, app, marks);

  parsed_.config.contexts[context_index].applications.push_back(app.index);
  parsed_.config.applications.push_back(std::move(app));
  parsed_.apps.push_back(std::move(marks));
}

void Reader::parameter(const Field& f, const AppType& type, const std::string& where,
                       ApplicationConfig& app, AppMarks& marks) {
  auto spec = std::find_if(type.params.begin(), type.params.end(),
                           [&](const ParamSpec& s) { return s.name == f.key; });
  if (spec == type.params.end()) {
    std::vector<std::string> expected = kAppKeys;
    for (const auto& s : type.params) expected.push_back(s.name);
    d_.error(f.key_node.Mark(),
             fmt::format("unknown key '{}' in {} of type '{}' ({})", f.key, where, type.name,
                         unknown_param_hint(f.key, type.params, expected)));
    return;
  }
  marks.keys[f.key] = f.key_node.Mark();
  std::vector<ParamIssue> issues;
  const json value = yaml_to_json(f.value, &*spec, f.key, marks, d_);
  app.params[f.key] = check_param(*spec, value, f.key, issues);
  for (const ParamIssue& issue : issues) report(issue, where, marks);
}

void Reader::report(const ParamIssue& issue, const std::string& where, const AppMarks& marks) {
  switch (issue.kind) {
    case ParamIssue::Kind::value:
      d_.error(marks.value_mark(issue.path),
               fmt::format("parameter '{}' of {}: {}", issue.path, where, issue.message));
      break;
    case ParamIssue::Kind::unknown_key:
      d_.error(marks.key_mark(join_path(issue.path, issue.key)),
               fmt::format("unknown key '{}' in parameter '{}' of {} ({})", issue.key, issue.path,
                           where, issue.message));
      break;
    case ParamIssue::Kind::missing_key:
      d_.error(marks.value_mark(issue.path),
               fmt::format("missing required key '{}' in parameter '{}' of {}", issue.key,
                           issue.path, where));
      break;
  }
}

void Reader::defaults(const AppType& type, const std::string& where, ApplicationConfig& app,
                      const AppMarks& marks) {
  for (const ParamSpec& spec : type.params) {
    if (app.params.contains(spec.name)) continue;
    if (is_required(spec)) {
      d_.error(marks.node, fmt::format("missing required parameter '{}' in {} (type '{}')",
                                       spec.name, where, type.name));
      continue;
    }
    auto d = param_default(spec);
    if (!d) {
      d_.error(marks.node,
               fmt::format("application type '{}': {}", type.name, d.error().message()));
      continue;
    }
    app.params[spec.name] = std::move(*d);
  }
}

}  // namespace daqflow::runtime::detail
