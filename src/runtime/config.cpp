// The cluster model's queries and the loader's entry points. The reading itself is in
// config_parse.cpp, the checks between parts in config_check.cpp.
#include "daqflow/runtime/config.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "daqflow/core/enum_names.hpp"
#include "daqflow/runtime/application.hpp"
#include "runtime/config_parse.hpp"

namespace daqflow::runtime {

const ApplicationConfig* ClusterConfig::find_application(std::string_view id) const {
  for (const auto& app : applications) {
    if (app.id == id) return &app;
  }
  return nullptr;
}

const ContextConfig* ClusterConfig::find_context(std::string_view name) const {
  for (const auto& ctx : contexts) {
    if (ctx.name == name) return &ctx;
  }
  return nullptr;
}

const char* to_string(LauncherKind kind) {
  static constexpr auto kNames =
      core::enum_names<LauncherKind>({{LauncherKind::local, "local"},
                                      {LauncherKind::ssh, "ssh"},
                                      {LauncherKind::supervisor, "supervisor"},
                                      {LauncherKind::slurm, "slurm"}});
  return kNames.name(kind);
}

const HostConfig* ClusterConfig::host_of(const ContextConfig& context) const {
  const std::string host = detail::canonical_host(context.host);
  for (const auto& h : hosts) {
    for (const auto& address : h.addresses) {
      if (detail::canonical_host(address) == host) return &h;
    }
  }
  return nullptr;
}

std::vector<std::string> ClusterConfig::mpi_contexts() const {
  std::vector<std::string> out;
  for (const ContextConfig& ctx : contexts) {
    for (const AppIndex a : ctx.applications) {
      if (applications[a].transport == "mpi") {
        out.push_back(ctx.name);
        break;
      }
    }
  }
  return out;
}

transport::AddressTable ClusterConfig::address_table() const {
  transport::AddressTable table(applications.size());
  for (const auto& ctx : contexts) {
    for (std::size_t i = 0; i < ctx.applications.size(); ++i) {
      const ApplicationConfig& app = applications[ctx.applications[i]];
      table[app.index] = transport::AppAddress{app.index, app.id, ctx.name, ctx.host,
                                               static_cast<std::uint16_t>(ctx.data_port + i)};
    }
  }
  return table;
}

std::vector<std::vector<std::string>> ClusterConfig::process_groups(
    const AppRegistry& registry) const {
  // Union-find over contexts; an inproc link joins the contexts of its two ends.
  std::vector<std::size_t> parent(contexts.size());
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  auto root = [&](std::size_t c) {
    while (parent[c] != c) c = parent[c] = parent[parent[c]];
    return c;
  };
  auto context_of = [&](const ApplicationConfig& app) -> std::optional<std::size_t> {
    for (std::size_t c = 0; c < contexts.size(); ++c) {
      if (contexts[c].name == app.context) return c;
    }
    return std::nullopt;
  };

  for (const auto& app : applications) {
    const AppType* type = registry.find(app.type);
    if (type == nullptr || app.transport != "inproc") continue;
    for (const std::string& name : type->peer_params) {
      for (const auto& [path, id] : detail::named_ids(app.params, name)) {
        const ApplicationConfig* peer = find_application(id);
        if (peer == nullptr || peer->transport != "inproc") continue;
        const auto a = context_of(app);
        const auto b = context_of(*peer);
        if (a && b) parent[root(*a)] = root(*b);
      }
    }
  }

  std::vector<std::vector<std::string>> groups;
  std::vector<std::size_t> group_of_root(contexts.size(), contexts.size());
  for (std::size_t c = 0; c < contexts.size(); ++c) {
    std::size_t& g = group_of_root[root(c)];
    if (g == contexts.size()) {
      g = groups.size();
      groups.emplace_back();
    }
    groups[g].push_back(contexts[c].name);
  }
  return groups;
}

namespace {

Result<ClusterConfig> parse(const std::string& text, const std::string& file,
                            const AppRegistry& registry, AppRegistry* extensible) {
  detail::Diagnostics d(file);
  const std::optional<YAML::Node> root = detail::load_document(text, d);
  if (!root) return d.to_error();

  detail::ParsedConfig parsed;
  parsed.config.file = file;
  try {
    detail::read_document(*root, registry, extensible, parsed, d);
    detail::check_cluster(registry, parsed, d);
  } catch (const YAML::Exception& e) {
    // yaml-cpp throws on nodes it cannot represent (e.g. invalid aliases); report, don't crash.
    d.error(e.mark, e.msg);
  }
  if (!d.empty()) return d.to_error();
  return std::move(parsed.config);
}

Result<std::string> read_text(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Error(fmt::format("{}: is a directory, not a configuration file", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error(code_of_errno(errno),
                 fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return Error(code_of_errno(errno),
                 fmt::format("{}: read error: {}", path, std::strerror(errno)));
  return text.str();
}

}  // namespace

Result<ClusterConfig> parse_config(const std::string& text, const std::string& file,
                                   const AppRegistry& registry) {
  return parse(text, file, registry, nullptr);
}

Result<ClusterConfig> parse_config(const std::string& text, const std::string& file,
                                   AppRegistry& registry) {
  return parse(text, file, registry, &registry);
}

Result<ClusterConfig> load_config(const std::string& path, const AppRegistry& registry) {
  auto text = read_text(path);
  if (!text) return text.error();
  return parse(*text, path, registry, nullptr);
}

Result<ClusterConfig> load_config(const std::string& path, AppRegistry& registry) {
  auto text = read_text(path);
  if (!text) return text.error();
  return parse(*text, path, registry, &registry);
}

}  // namespace daqflow::runtime
