// Pre-flight checks (preflight.hpp): the checks one host makes of itself, and the round of every
// host of a run.
#include "daqflow/control/preflight.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "daqflow/runtime/access.hpp"
#include "daqflow/runtime/app_library.hpp"
#include "daqflow/transport/shm.hpp"

namespace daqflow::control {

namespace fs = std::filesystem;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string mib(std::uint64_t bytes) {
  return fmt::format("{:.0f} MiB", static_cast<double>(bytes) / kMiB);
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The socket inodes listening on TCP port `port` (/proc/net/tcp and tcp6, state 0A).
std::vector<std::string> listening_inodes(std::uint16_t port) {
  std::vector<std::string> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      const auto colon = local.rfind(':');
      if (state != "0A" || colon == std::string::npos) continue;
      if (std::stoul(local.substr(colon + 1), nullptr, 16) == port) out.push_back(inode);
    }
  }
  return out;
}

// "pid 1234 (daqflow)" for the process listening on the port, where /proc shows it.
std::string port_owner(std::uint16_t port) {
  const auto inodes = listening_inodes(port);
  if (inodes.empty()) return "";
  std::error_code ec;
  for (const auto& proc : fs::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    for (const auto& fd : fs::directory_iterator(proc.path() / "fd", ec)) {
      const std::string target = fs::read_symlink(fd.path(), ec).string();
      for (const auto& inode : inodes) {
        if (target == "socket:[" + inode + "]") {
          std::ifstream comm(proc.path() / "comm");
          std::string name;
          std::getline(comm, name);
          return "pid " + pid + " (" + name + ")";
        }
      }
    }
  }
  return "";
}

// Whether a TCP listener could bind address:port now (SO_REUSEADDR, as daqflow's listeners do:
// only a listening socket makes the port busy): 0, else bind's errno.
int bind_error(const std::string& address, std::uint16_t port) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  if (::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    length = sizeof *v4;
  } else if (::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    length = sizeof *v6;
  } else {
    return 0;  // a name: resolved by the listener itself
  }
  const int fd = ::socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  const int r = ::bind(fd, reinterpret_cast<sockaddr*>(&storage), length);
  const int error = r == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

void check_port(const std::string& what, const std::string& address, std::uint16_t port,
                const std::string& key, const runtime::ContextConfig& ctx,
                std::vector<PreflightProblem>& out) {
  const int error = bind_error(address, port);
  if (error == 0) return;
  if (error == EADDRNOTAVAIL) {
    out.push_back({ctx.name, ctx.host,
                   fmt::format("{} {}: address {} is not on this host", what, port, address),
                   "give the context an address of its host (host, control_bind)"});
    return;
  }
  const std::string owner = port_owner(port);
  out.push_back({ctx.name, ctx.host,
                 owner.empty()
                     ? fmt::format("{} {} is taken ({})", what, port, std::strerror(error))
                     : fmt::format("{} {} is taken by {}", what, port, owner),
                 fmt::format("stop {}, or give the context another {}",
                             owner.empty() ? "what listens there" : "that process", key)});
}

// The nearest folder of `dir` that exists (an output's folder is made at Configure).
fs::path existing_ancestor(fs::path dir) {
  std::error_code ec;
  dir = fs::absolute(dir, ec).lexically_normal();
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.root_path()) dir = dir.parent_path();
  return dir;
}

void check_ports(const runtime::ClusterConfig& config, const runtime::ContextConfig& ctx,
                 std::vector<PreflightProblem>& out) {
  check_port("control port", ctx.control_bind, ctx.control_port, "control_port", ctx, out);
  const transport::AddressTable table = config.address_table();
  for (const runtime::AppIndex index : ctx.applications) {
    const runtime::ApplicationConfig& app = config.applications[index];
    // The transports that listen on the data port (ucx and ofi for their connections).
    if (app.transport != "tcp" && app.transport != "ucx" && app.transport != "ofi") continue;
    check_port("data port of " + app.id, "0.0.0.0", table[index].data_port, "data_port", ctx, out);
  }
}

// What to look at when a host does not answer through its launcher.
std::string reach_fix(runtime::LauncherKind engine, const std::string& address) {
  switch (engine) {
    case runtime::LauncherKind::ssh:
      return "check that the host is up and that `ssh " + address +
             " true` works without a password (docs/deployment.md)";
    case runtime::LauncherKind::supervisor:
      return "check that supervisord runs there and answers at the host's supervisor.url";
    case runtime::LauncherKind::slurm:
      return "check that the node is up in Slurm (sinfo -N) and that its slurmd runs";
    default:
      return "";
  }
}

// The checks of a host elsewhere, run there by daqflow itself through the host's launcher.
std::vector<PreflightProblem> check_remote_host(const runtime::HostConfig& host,
                                                const std::string& address,
                                                const std::vector<std::string>& contexts,
                                                const LaunchSettings& settings) {
  const std::string engine = to_string(host.launcher);
  auto launcher = make_launcher(&host, address, settings);
  if (!launcher) return {{join(contexts), address, launcher.error().message(), ""}};
  std::vector<std::string> args{"check", "--host-checks", settings.config_path, "--host", address};
  for (const auto& c : contexts) args.insert(args.end(), {"--context", c});
  auto said = (*launcher)->run_daqflow(args);
  if (!said) {
    // One line: the engine's own message may span several.
    std::string why = said.error().message();
    std::replace(why.begin(), why.end(), '\n', ' ');
    while (!why.empty() && why.back() == ' ') why.pop_back();
    return {{"", address, fmt::format("does not answer through {}: {}", engine, why),
             reach_fix(host.launcher, address)}};
  }
  // The answer is the last line (an engine may print before it).
  std::string text = *said;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const auto line_start = text.rfind('\n');
  const std::string last = line_start == std::string::npos ? text : text.substr(line_start + 1);
  auto check = host_check_from_json(nlohmann::json::parse(last, nullptr, false));
  if (!check) {
    return {{"", address, "daqflow there could not make the checks: " + text,
             "install this daqflow build there (the host's `daqflow` key names the program)"}};
  }
  std::vector<PreflightProblem> out;
  if (check->build_id != runtime::build_id()) {
    out.push_back({"", address,
                   fmt::format("runs {}, this controller {}", check->build_id, runtime::build_id()),
                   "install the same daqflow build on every host (the host's `daqflow` key "
                   "names the program)"});
  }
  out.insert(out.end(), check->problems.begin(), check->problems.end());
  return out;
}

}  // namespace

std::string PreflightProblem::str() const {
  const std::string who = contexts.empty() ? "host " + host
                          : contexts.find(',') != std::string::npos
                              ? "contexts " + contexts + " on " + host
                              : "context " + contexts + " on " + host;
  return who + ": " + what + (fix.empty() ? "" : ": " + fix);
}

HostCheck check_this_host(const runtime::ClusterConfig& config,
                          const runtime::AppRegistry& registry,
                          const std::vector<std::string>& contexts, const std::string& host) {
  HostCheck check;
  check.build_id = runtime::build_id();
  auto& out = check.problems;
  std::uint64_t shm_bytes = 0;
  std::vector<std::string> shm_users;
  struct DiskUse {
    std::uint64_t bytes = 0;
    std::vector<std::string> apps;
    std::vector<std::string> contexts;
    fs::path where;
  };
  std::map<dev_t, DiskUse> disks;
  for (const auto& name : contexts) {
    const runtime::ContextConfig* ctx = config.find_context(name);
    if (ctx == nullptr) continue;
    check_ports(config, *ctx, out);
    for (const runtime::AppIndex index : ctx->applications) {
      const runtime::ApplicationConfig& app = config.applications[index];
      const runtime::AppType* type = registry.find(app.type);
      const runtime::HostNeeds needs = type != nullptr && type->host_needs
                                           ? type->host_needs(app, config)
                                           : runtime::HostNeeds{};
      if (app.transport == "shm") {
        const std::uint64_t bytes = needs.send_pool_bytes + transport::shm::endpoint_segment_bytes(
                                                                config.applications.size());
        shm_bytes += bytes;
        shm_users.push_back(app.id + " " + mib(bytes));
      }
      for (const auto& disk : needs.disks) {
        const fs::path where = existing_ancestor(disk.dir);
        struct stat st {};
        if (::stat(where.c_str(), &st) != 0) continue;
        if (::access(where.c_str(), W_OK) != 0) {
          out.push_back({ctx->name, ctx->host,
                         fmt::format("{}'s output folder {}: {} cannot be written ({})", app.id,
                                     disk.dir, where.string(), std::strerror(errno)),
                         "make it writable, or point the output's dir elsewhere"});
          continue;
        }
        DiskUse& use = disks[st.st_dev];
        use.bytes += disk.bytes;
        use.apps.push_back(app.id);
        if (use.contexts.empty() || use.contexts.back() != ctx->name) {
          use.contexts.push_back(ctx->name);
        }
        use.where = where;
      }
    }
  }
  if (shm_bytes > 0) {
    struct statvfs st {};
    if (::statvfs("/dev/shm", &st) == 0) {
      const std::uint64_t free = std::uint64_t{st.f_bavail} * st.f_frsize;
      if (free < shm_bytes) {
        out.push_back({join(contexts), host,
                       fmt::format("the shm transport needs {} in /dev/shm ({}), {} are free",
                                   mib(shm_bytes), join(shm_users), mib(free)),
                       "enlarge /dev/shm (mount -o remount,size=..., docker run --shm-size), "
                       "free what crashed runs left (daqflow shm), or make the pools smaller "
                       "(a readout's chunk_size and chunks, a source's message_size)"});
      }
    }
  }
  for (const auto& [dev, use] : disks) {
    struct statvfs st {};
    if (use.bytes == 0 || ::statvfs(use.where.c_str(), &st) != 0) continue;
    const std::uint64_t free = std::uint64_t{st.f_bavail} * st.f_frsize;
    if (free >= use.bytes) continue;
    out.push_back({join(use.contexts), host,
                   fmt::format("the outputs of {} may write {} under {}, {} are free",
                               join(use.apps), mib(use.bytes), use.where.string(), mib(free)),
                   "free space there, point output.dir elsewhere, or lower output.max_total_mb"});
  }
  return check;
}

void to_json(nlohmann::json& out, const HostCheck& check) {
  out = {{"build_id", check.build_id}, {"problems", nlohmann::json::array()}};
  for (const auto& p : check.problems) {
    out["problems"].push_back(
        {{"contexts", p.contexts}, {"host", p.host}, {"what", p.what}, {"fix", p.fix}});
  }
}

Result<HostCheck> host_check_from_json(const nlohmann::json& in) {
  if (!in.is_object() || !in.contains("build_id") || !in.contains("problems") ||
      !in["problems"].is_array()) {
    return Error("not a host check: " + in.dump());
  }
  HostCheck check;
  check.build_id = in.value("build_id", "");
  for (const auto& p : in["problems"]) {
    check.problems.push_back(
        {p.value("contexts", ""), p.value("host", ""), p.value("what", ""), p.value("fix", "")});
  }
  return check;
}

Result<std::vector<PreflightProblem>> preflight(const runtime::ClusterConfig& config,
                                                const runtime::AppRegistry& registry,
                                                const std::string& config_path,
                                                const std::string& self) {
  auto token = runtime::access_token(config);
  if (!token) return token.error();
  LaunchSettings settings{
      self, fs::absolute(config_path).string(), "", *token, "", config.run.number};
  // The contexts by host: this machine's ("" key), and each launcher's address.
  std::map<std::string, std::vector<std::string>> by_host;
  std::map<std::string, const runtime::HostConfig*> host_configs;
  for (const auto& ctx : config.contexts) {
    const runtime::HostConfig* host = config.host_of(ctx);
    const bool remote = host != nullptr && host->launcher != runtime::LauncherKind::local;
    by_host[remote ? ctx.host : std::string()].push_back(ctx.name);
    if (remote) host_configs[ctx.host] = host;
  }
  if (host_configs.size() > 0) {
    auto text = read_text_file(settings.config_path);
    if (!text) return text.error();
    settings.config_text = std::move(*text);
  }
  std::vector<std::future<std::vector<PreflightProblem>>> checks;
  for (const auto& [address, contexts] : by_host) {
    checks.push_back(std::async(std::launch::async, [&, address = address, contexts = contexts] {
      if (address.empty()) {
        std::string hosts;
        for (const auto& name : contexts) {
          const std::string& h = config.find_context(name)->host;
          if (hosts.find(h) == std::string::npos) hosts += (hosts.empty() ? "" : ", ") + h;
        }
        return check_this_host(config, registry, contexts, hosts).problems;
      }
      return check_remote_host(*host_configs.at(address), address, contexts, settings);
    }));
  }
  std::vector<PreflightProblem> problems;
  for (auto& c : checks) {
    auto found = c.get();
    problems.insert(problems.end(), found.begin(), found.end());
  }
  return problems;
}

}  // namespace daqflow::control
