// Checks between the parts of a configuration: names given twice, ports two contexts both
// claim, parameters naming applications that do not exist, and links whose ends disagree on
// the transport. Each runs on what read_document() could read, so that one file reports all.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include <algorithm>
#include <map>
#include <set>

#include "runtime/config_parse.hpp"
#include "runtime/param_check.hpp"

namespace daqflow::runtime::detail {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxListed = 20;

void check_unique_contexts(const ParsedConfig& parsed, Diagnostics& d) {
  std::map<std::string, std::size_t> first;
  for (std::size_t i = 0; i < parsed.config.contexts.size(); ++i) {
    const std::string& name = parsed.config.contexts[i].name;
    if (name.empty()) continue;
    auto [it, inserted] = first.emplace(name, i);
    if (!inserted) {
      d.error(parsed.contexts[i].name,
              fmt::format("duplicate context name '{}' (first defined at {})", name,
                          d.location(parsed.contexts[it->second].name).str()));
    }
  }
}

void check_unique_applications(const ParsedConfig& parsed, Diagnostics& d) {
  std::map<std::string, std::size_t> first;
  for (std::size_t i = 0; i < parsed.config.applications.size(); ++i) {
    const ApplicationConfig& app = parsed.config.applications[i];
    if (app.id.empty()) continue;
    auto [it, inserted] = first.emplace(app.id, i);
    if (!inserted) {
      const ApplicationConfig& other = parsed.config.applications[it->second];
      d.error(parsed.apps[i].id,
              fmt::format("duplicate application id '{}' (first defined at {} in context '{}'); "
                          "ids must be unique in the whole cluster",
                          app.id, d.location(parsed.apps[it->second].id).str(), other.context));
    }
  }
}

// Ports are claimed per host: the control port, then data_port + i for application i.
class PortClaims {
 public:
  PortClaims(const ParsedConfig& parsed, Diagnostics& d) : parsed_(parsed), d_(d) {}

  void claim_all() {
    for (std::size_t c = 0; c < parsed_.config.contexts.size(); ++c) {
      const ContextConfig& ctx = parsed_.config.contexts[c];
      const ContextMarks& marks = parsed_.contexts[c];
      if (!marks.ports_valid) continue;
      claim(c, ctx.control_port, "control port", marks.control_port);
      for (std::size_t i = 0; i < ctx.applications.size(); ++i) {
        const std::string& id = parsed_.config.applications[ctx.applications[i]].id;
        claim(c, static_cast<int>(ctx.data_port + i),
              fmt::format("data port of application '{}'", id), marks.data_port);
      }
    }
  }

 private:
  struct Claim {
    std::size_t context;
    std::string role;
  };

  void claim(std::size_t context, int port, std::string role, const YAML::Mark& mark) {
    const ContextConfig& ctx = parsed_.config.contexts[context];
    const auto key = std::make_pair(canonical_host(ctx.host), port);
    auto [it, inserted] = claims_.emplace(key, Claim{context, role});
    if (inserted) return;
    const Claim& other = it->second;
    // One message per pair of contexts: overlapping ranges would otherwise repeat it per port.
    if (!reported_.insert({other.context, context}).second) return;
    const ContextConfig& other_ctx = parsed_.config.contexts[other.context];
    if (other.context == context) {
      d_.error(mark, fmt::format("context '{}': port {} is both its {} and its {}; move "
                                 "control_port or data_port",
                                 ctx.name, port, other.role, role));
      return;
    }
    d_.error(mark,
             fmt::format("port {} of context '{}' ({}) collides with context '{}' ({}) on "
                         "host {}; context '{}' is defined at {}",
                         port, ctx.name, role, other_ctx.name, other.role, ctx.host, other_ctx.name,
                         d_.location(parsed_.contexts[other.context].node).str()));
  }

  const ParsedConfig& parsed_;
  Diagnostics& d_;
  std::map<std::pair<std::string, int>, Claim> claims_;
  std::set<std::pair<std::size_t, std::size_t>> reported_;
};

using NamedIds = std::vector<std::pair<std::string, std::string>>;

// The ids a parameter names, when its value has the shape its spec says (a value of the wrong
// shape is reported by the parameter checks already, and is not followed).
NamedIds ids_of(const ParamSpec* spec, const json& object, const std::string& name) {
  const auto it = object.find(name);
  if (it == object.end()) return {};
  if (spec != nullptr) {
    if (spec->kind == ParamKind::app_ref && !it->is_string()) return {};
    if (spec->kind == ParamKind::app_ref_list && !it->is_array()) return {};
  }
  return named_ids(object, name);
}

const ParamSpec* find_spec(const std::vector<ParamSpec>& specs, const std::string& name) {
  for (const ParamSpec& s : specs) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// Every application id the parameters name through app_ref and app_ref_list specs, at any depth.
void collect_references(const std::vector<ParamSpec>& specs, const json& object,
                        const std::string& path, NamedIds& out) {
  if (!object.is_object()) return;
  for (const ParamSpec& spec : specs) {
    if (spec.kind == ParamKind::app_ref || spec.kind == ParamKind::app_ref_list) {
      for (auto& [sub, id] : ids_of(&spec, object, spec.name)) {
        out.emplace_back(join_path(path, sub), std::move(id));
      }
    } else if (spec.kind == ParamKind::object && object.contains(spec.name)) {
      collect_references(spec.fields, object[spec.name], join_path(path, spec.name), out);
    }
  }
}

std::string known_ids_hint(const std::string& id, const std::vector<std::string>& ids) {
  std::vector<std::string> listed(ids.begin(), ids.begin() + std::min(ids.size(), kMaxListed));
  if (ids.size() > kMaxListed) listed.emplace_back("...");
  const std::string guess = closest_name(id, ids);
  return fmt::format("{}known applications: {}",
                     guess.empty() ? std::string() : fmt::format("did you mean '{}'? ", guess),
                     join_names(listed));
}

class LinkChecks {
 public:
  LinkChecks(const AppRegistry& registry, const ParsedConfig& parsed, Diagnostics& d)
      : registry_(registry), parsed_(parsed), d_(d) {
    for (std::size_t i = 0; i < parsed_.config.applications.size(); ++i) {
      const std::string& id = parsed_.config.applications[i].id;
      if (!id.empty() && index_.emplace(id, i).second) ids_.push_back(id);
    }
  }

  void check_all() {
    for (std::size_t i = 0; i < parsed_.config.applications.size(); ++i) {
      // References are followed even where other parameters are wrong: ids_of() takes
      // only well-formed ids, and every fault of the file is reported at once.
      const AppType* type = registry_.find(parsed_.config.applications[i].type);
      if (type != nullptr) check_application(i, *type);
    }
  }

 private:
  void check_application(std::size_t i, const AppType& type) {
    const ApplicationConfig& app = parsed_.config.applications[i];
    const AppMarks& marks = parsed_.apps[i];
    NamedIds refs;
    collect_references(type.params, app.params, "", refs);
    for (const std::string& name : type.peer_params) {
      for (auto& ref : ids_of(find_spec(type.params, name), app.params, name)) {
        if (std::find(refs.begin(), refs.end(), ref) == refs.end()) refs.push_back(ref);
      }
    }
    for (const auto& [path, id] : refs) {
      if (index_.count(id) == 0) {
        d_.error(marks.value_mark(path),
                 fmt::format("parameter '{}' of application '{}': no application '{}' in the "
                             "cluster ({})",
                             path, app.id, id, known_ids_hint(id, ids_)));
      }
    }
    for (const std::string& name : type.peer_params) {
      for (const auto& [path, id] : ids_of(find_spec(type.params, name), app.params, name)) {
        auto peer = index_.find(id);
        if (peer != index_.end())
          check_link(app, marks, path, parsed_.config.applications[peer->second]);
      }
    }
  }

  void check_link(const ApplicationConfig& app, const AppMarks& marks, const std::string& path,
                  const ApplicationConfig& peer) {
    if (app.transport != peer.transport) {
      d_.error(marks.value_mark(path),
               fmt::format("parameter '{}' of application '{}' links it to '{}', but '{}' uses "
                           "transport '{}' and '{}' uses '{}': both ends of a link must use the "
                           "same transport (set 'transport' of one of them)",
                           path, app.id, peer.id, app.id, app.transport, peer.id, peer.transport));
      return;
    }
    if (app.transport != "inproc" || app.context == peer.context) return;
    const ContextConfig* a = parsed_.config.find_context(app.context);
    const ContextConfig* b = parsed_.config.find_context(peer.context);
    if (a == nullptr || b == nullptr) return;
    if (canonical_host(a->host) != canonical_host(b->host)) {
      d_.error(marks.value_mark(path),
               fmt::format("parameter '{}' of application '{}' links it to '{}' through inproc, "
                           "which puts contexts '{}' (host {}) and '{}' (host {}) in one process: "
                           "they must be on the same host, or use another transport",
                           path, app.id, peer.id, a->name, a->host, b->name, b->host));
    }
  }

  const AppRegistry& registry_;
  const ParsedConfig& parsed_;
  Diagnostics& d_;
  std::map<std::string, std::size_t> index_;
  std::vector<std::string> ids_;
};

// The faults' links: both ends exist and differ, a corruption goes where a payload CRC can catch
// it, and a reset where there is a connection.
void resolve_faults(ParsedConfig& parsed, Diagnostics& d) {
  std::vector<std::string> ids;
  for (const ApplicationConfig& app : parsed.config.applications) ids.push_back(app.id);
  for (std::size_t i = 0; i < parsed.faults.size(); ++i) {
    const FaultMarks& marks = parsed.faults[i];
    transport::FaultRule& rule = parsed.config.faults[i];
    const std::string where = fmt::format("fault #{}", i + 1);
    const ApplicationConfig* ends[2] = {nullptr, nullptr};
    const std::pair<const std::string*, const YAML::Mark*> named[2] = {
        {&marks.from, &marks.from_mark}, {&marks.to, &marks.to_mark}};
    for (int k = 0; k < 2; ++k) {
      if (named[k].first->empty()) continue;  // missing or malformed: reported already
      ends[k] = parsed.config.find_application(*named[k].first);
      if (ends[k] == nullptr) {
        d.error(*named[k].second, fmt::format("'{}' in {}: no application '{}' in the cluster ({})",
                                              k == 0 ? "from" : "to", where, *named[k].first,
                                              known_ids_hint(*named[k].first, ids)));
      }
    }
    if (ends[0] == nullptr || ends[1] == nullptr) continue;
    rule.from = ends[0]->index;
    rule.to = ends[1]->index;
    if (rule.from == rule.to) {
      d.error(marks.to_mark,
              fmt::format("{}: from and to are the same application '{}'", where, ends[0]->id));
    }
    if (rule.kind == transport::FaultRule::Kind::corrupt &&
        (!parsed.config.transports.endpoint.payload_crc ||
         (ends[0]->transport != "tcp" && ends[0]->transport != "shm"))) {
      d.error(marks.node, fmt::format("{}: a corruption is caught only by the receiver's payload "
                                      "CRC: it needs transports.payload_crc: true and a link on "
                                      "tcp or shm ('{}' uses {})",
                                      where, ends[0]->id, ends[0]->transport));
    }
    if (rule.kind == transport::FaultRule::Kind::reset && ends[0]->transport != "tcp") {
      d.error(marks.node,
              fmt::format("{}: only a tcp link has a connection to reset ('{}' uses {})", where,
                          ends[0]->id, ends[0]->transport));
    }
  }
}

// A context started on another host is controlled from elsewhere: unless it says otherwise, its
// control port listens on its host's control_bind, else on its own address (else everywhere).
void apply_host_defaults(ParsedConfig& parsed) {
  ClusterConfig& config = parsed.config;
  for (std::size_t i = 0; i < config.contexts.size(); ++i) {
    ContextConfig& ctx = config.contexts[i];
    const HostConfig* host = config.host_of(ctx);
    if (host == nullptr || host->launcher == LauncherKind::local) continue;
    if (parsed.contexts[i].control_bind_given) continue;
    if (!host->control_bind.empty()) {
      ctx.control_bind = host->control_bind;
    } else {
      in6_addr buf{};
      const bool ip = ::inet_pton(AF_INET, ctx.host.c_str(), &buf) == 1 ||
                      ::inet_pton(AF_INET6, ctx.host.c_str(), &buf) == 1;
      ctx.control_bind = ip ? ctx.host : "0.0.0.0";
    }
  }
}

// A context marked expendable must host only applications the run can lose; the contexts of a
// group agree on its min, and the group has at least min of them.
void check_expendable(const AppRegistry& registry, ParsedConfig& parsed, Diagnostics& d) {
  const ClusterConfig& config = parsed.config;
  struct Group {
    std::uint32_t min = 0;
    std::size_t members = 0;
    YAML::Mark first;  // its first context
  };
  std::map<std::string, Group> groups;
  for (std::size_t i = 0; i < config.contexts.size(); ++i) {
    const ContextConfig& ctx = config.contexts[i];
    if (ctx.expendable.expendable != std::optional<bool>(true)) continue;
    std::vector<std::string> types;
    for (const AppIndex a : ctx.applications) {
      const ApplicationConfig& app = config.applications[a];
      types.push_back(app.type);
      const AppType* type = registry.find(app.type);
      if (type == nullptr) {  // reported as unknown elsewhere
        types.clear();
        break;
      }
      if (!type->survivable && !type->auxiliary) {
        d.error(parsed.contexts[i].node,
                fmt::format("context '{}' is expendable, but its application '{}' ({}) is not "
                            "one the run can lose",
                            ctx.name, app.id, app.type));
        types.clear();
        break;
      }
    }
    if (!types.empty() && !registry.survivable(types)) {
      d.error(parsed.contexts[i].node,
              fmt::format("context '{}' is expendable, but it hosts only applications that "
                          "serve others (such as clock clients): give it one the run can lose, "
                          "or drop 'expendable'",
                          ctx.name));
    }
    if (ctx.expendable.group.empty()) continue;
    auto [it, added] = groups.try_emplace(ctx.expendable.group,
                                          Group{ctx.expendable.min, 0, parsed.contexts[i].node});
    if (!added && it->second.min != ctx.expendable.min) {
      d.error(parsed.contexts[i].node,
              fmt::format("context '{}': expendable group '{}' has min {} here and {} elsewhere",
                          ctx.name, ctx.expendable.group, ctx.expendable.min, it->second.min));
    }
    ++it->second.members;
  }
  for (const auto& [group, g] : groups) {
    if (g.members < g.min) {
      d.error(g.first, fmt::format("expendable group '{}' has {} context(s), fewer than its min {}",
                                   group, g.members, g.min));
    }
  }
}

}  // namespace

void check_cluster(const AppRegistry& registry, ParsedConfig& parsed, Diagnostics& d) {
  apply_host_defaults(parsed);
  check_expendable(registry, parsed, d);
  check_unique_contexts(parsed, d);
  check_unique_applications(parsed, d);
  PortClaims(parsed, d).claim_all();
  LinkChecks(registry, parsed, d).check_all();
  resolve_faults(parsed, d);
}

}  // namespace daqflow::runtime::detail
