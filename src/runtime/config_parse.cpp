// The document -> the ClusterConfig model, key by key. Each key is checked where it is read, so
// that an error points at the key or value at fault; reading goes on after an error to report
// every fault of the file at once.
#include "runtime/config_parse.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include <algorithm>
#include <filesystem>

#include "daqflow/transport/transport.hpp"
#include "runtime/param_check.hpp"

namespace daqflow::runtime::detail {

namespace {

using nlohmann::json;

const std::vector<std::string> kTopKeys{"run",   "transports", "monitoring", "access",
                                        "hosts", "contexts",   "faults"};
const std::vector<std::string> kHostKeys{"address",    "launcher",     "daqflow", "workdir",
                                         "log_dir",    "control_bind", "lease_s", "ssh",
                                         "supervisor", "slurm"};
const std::vector<std::string> kLaunchers{"local", "ssh", "supervisor", "slurm"};
const std::vector<std::string> kSshKeys{"destination", "user", "port", "options"};
const std::vector<std::string> kSupervisorKeys{"url", "user", "password_file"};
const std::vector<std::string> kSlurmKeys{"node", "partition", "account"};
const std::vector<std::string> kRestartKeys{"policy", "backoff_ms", "max_backoff_ms",
                                            "max_restarts"};
const std::vector<std::string> kMonitoringKeys{"interval_ms", "history_s", "max_series"};
const std::vector<std::string> kAccessKeys{"token_file", "protect_reads"};
const std::vector<std::string> kFaultKeys{"from",     "to",      "delay_ms", "cut_ms",
                                          "stall_ms", "corrupt", "reset",    "after_messages",
                                          "after_ms", "for_ms"};
const std::vector<std::string> kFaultKinds{"delay_ms", "cut_ms", "stall_ms", "corrupt", "reset"};
const std::vector<std::string> kRunKeys{"number", "output"};
const std::vector<std::string> kTransportKeys{
    "default",     "pipeline_depth", "max_message_size", "recv_buffers",  "socket_buffer_kb",
    "payload_crc", "ucx_tls",        "ofi_provider",     "mpi_completion"};
const std::vector<std::string> kMpiCompletions{"testsome", "test", "testall"};
const std::vector<std::string> kContextKeys{"name",       "host",         "control_port",
                                            "data_port",  "control_bind", "restart",
                                            "expendable", "applications"};
const std::vector<std::string> kExpendableKeys{"group", "min"};
const std::vector<std::string> kAppKeys{"type", "id", "transport", "cpu", "idle"};
const std::vector<std::string> kIdleStrategies{"spin", "yield", "backoff", "block"};

constexpr long long kMaxPort = 65535;

bool is_ip_address(const std::string& text) {
  in6_addr buf{};
  return ::inet_pton(AF_INET, text.c_str(), &buf) == 1 ||
         ::inet_pton(AF_INET6, text.c_str(), &buf) == 1;
}

const Field* find_field(const std::vector<Field>& fields, std::string_view key) {
  auto it =
      std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.key == key; });
  return it == fields.end() ? nullptr : &*it;
}

class Reader {
 public:
  Reader(const AppRegistry& registry, ParsedConfig& parsed, Diagnostics& d)
      : registry_(registry), parsed_(parsed), d_(d) {
    for (std::string_view name : transport::transport_names()) transports_.emplace_back(name);
  }

  void document(const YAML::Node& root) {
    if (!root.IsMap()) {
      d_.error(root.Mark(), fmt::format("the configuration must be a mapping with the keys {}, "
                                        "got {}",
                                        join_names(kTopKeys), describe_node(root)));
      return;
    }
    const auto fields = fields_of(root, "the top level", d_);
    for (const Field& f : fields) {
      if (std::find(kTopKeys.begin(), kTopKeys.end(), f.key) == kTopKeys.end()) {
        unknown_key(f, "the top level", kTopKeys);
      }
    }
    // Transports first, whatever the order in the file: applications default to them.
    if (const Field* f = find_field(fields, "run")) run_settings(*f);
    if (const Field* f = find_field(fields, "transports")) transport_settings(*f);
    if (const Field* f = find_field(fields, "monitoring")) monitoring_settings(*f);
    if (const Field* f = find_field(fields, "access")) access_settings(*f);
    if (const Field* f = find_field(fields, "hosts")) hosts(*f);
    if (const Field* f = find_field(fields, "contexts")) {
      contexts(*f);
    } else {
      d_.error(root.Mark(), "missing required key 'contexts' at the top level");
    }
    if (const Field* f = find_field(fields, "faults")) faults(*f);
  }

 private:
  void unknown_key(const Field& f, const std::string& where,
                   const std::vector<std::string>& expected) {
    d_.error(f.key_node.Mark(), fmt::format("unknown key '{}' in {} ({})", f.key, where,
                                            expected_keys_hint(f.key, expected)));
  }

  // A mapping that may be left empty (`run:`); anything else is an error.
  bool mapping_or_empty(const Field& f) {
    if (f.value.IsMap() || f.value.IsNull()) return true;
    d_.error(f.value.Mark(),
             fmt::format("'{}' must be a mapping, got {}", f.key, describe_node(f.value)));
    return false;
  }

  std::optional<long long> integer(const Field& f, const std::string& where, long long min,
                                   long long max) {
    const auto v = f.value.IsScalar() ? parse_integer(f.value.Scalar()) : std::nullopt;
    if (!v) {
      d_.error(f.value.Mark(), fmt::format("'{}' in {}: expected an integer in {}..{}, got {}",
                                           f.key, where, min, max, describe_node(f.value)));
      return std::nullopt;
    }
    if (*v < min || *v > max) {
      d_.error(f.value.Mark(),
               fmt::format("'{}' in {}: {} is out of range {}..{}", f.key, where, *v, min, max));
      return std::nullopt;
    }
    return v;
  }

  std::optional<std::string> text(const Field& f, const std::string& where) {
    if (!f.value.IsScalar() || f.value.Scalar().empty()) {
      d_.error(f.value.Mark(), fmt::format("'{}' in {}: expected a non-empty string, got {}", f.key,
                                           where, describe_node(f.value)));
      return std::nullopt;
    }
    return f.value.Scalar();
  }

  std::optional<std::string> name(const Field& f, const std::string& where) {
    auto v = text(f, where);
    if (v && !valid_name(*v)) {
      d_.error(f.value.Mark(), fmt::format("'{}' in {}: '{}' may contain only letters, digits, "
                                           "'_', '.' and '-', and no '..'",
                                           f.key, where, *v));
      return std::nullopt;
    }
    return v;
  }

  std::optional<std::string> choice(const Field& f, const std::string& where,
                                    const std::vector<std::string>& choices) {
    auto v = text(f, where);
    if (v && std::find(choices.begin(), choices.end(), *v) == choices.end()) {
      d_.error(f.value.Mark(), fmt::format("'{}' in {}: '{}' is not one of: {}", f.key, where, *v,
                                           join_names(choices)) +
                                   did_you_mean(*v, choices));
      return std::nullopt;
    }
    return v;
  }

  static std::string did_you_mean(const std::string& v, const std::vector<std::string>& choices) {
    const std::string guess = closest_name(v, choices);
    return guess.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", guess);
  }

  void run_settings(const Field& section) {
    if (!mapping_or_empty(section) || section.value.IsNull()) return;
    RunSettings& run = parsed_.config.run;
    for (const Field& f : fields_of(section.value, "run", d_)) {
      if (f.key == "number") {
        if (auto v = integer(f, "run", 0, 0xFFFFFFFFLL))
          run.number = static_cast<std::uint32_t>(*v);
      } else if (f.key == "output") {
        if (auto v = text(f, "run")) run.output = *v;
      } else {
        unknown_key(f, "run", kRunKeys);
      }
    }
  }

  void monitoring_settings(const Field& section) {
    if (!mapping_or_empty(section) || section.value.IsNull()) return;
    MonitoringSettings& m = parsed_.config.monitoring;
    for (const Field& f : fields_of(section.value, "monitoring", d_)) {
      if (f.key == "interval_ms") {
        if (auto v = integer(f, "monitoring", 10, 3600000))
          m.interval_ms = static_cast<std::uint32_t>(*v);
      } else if (f.key == "history_s") {
        if (auto v = integer(f, "monitoring", 1, 7 * 24 * 3600))
          m.history_s = static_cast<std::uint32_t>(*v);
      } else if (f.key == "max_series") {
        if (auto v = integer(f, "monitoring", 1, 65536))
          m.max_series = static_cast<std::uint32_t>(*v);
      } else {
        unknown_key(f, "monitoring", kMonitoringKeys);
      }
    }
    const std::uint64_t bytes =
        std::uint64_t{m.history_s} * 1000 / m.interval_ms * m.max_series * 8;
    if (bytes > (std::uint64_t{1} << 30)) {
      d_.error(
          section.key_node.Mark(),
          fmt::format("'monitoring': a history of {} s every {} ms for {} series takes {} MiB; "
                      "at most 1024",
                      m.history_s, m.interval_ms, m.max_series, bytes >> 20));
    }
  }

  void access_settings(const Field& section) {
    if (!mapping_or_empty(section) || section.value.IsNull()) return;
    AccessSettings& a = parsed_.config.access;
    for (const Field& f : fields_of(section.value, "access", d_)) {
      if (f.key == "token_file") {
        if (auto v = text(f, "access")) {
          std::filesystem::path path(*v);
          if (path.is_relative()) {
            path = std::filesystem::path(parsed_.config.file).parent_path() / path;
          }
          a.token_file = path.lexically_normal().string();
        }
      } else if (f.key == "protect_reads") {
        const auto v = f.value.IsScalar() ? parse_boolean(f.value.Scalar()) : std::nullopt;
        if (v) {
          a.protect_reads = *v;
        } else {
          d_.error(f.value.Mark(), fmt::format("'protect_reads' in access: expected true or "
                                               "false, got {}",
                                               describe_node(f.value)));
        }
      } else {
        unknown_key(f, "access", kAccessKeys);
      }
    }
  }

  void transport_settings(const Field& section) {
    if (!mapping_or_empty(section) || section.value.IsNull()) return;
    TransportSettings& t = parsed_.config.transports;
    const std::string where = "transports";
    for (const Field& f : fields_of(section.value, where, d_)) {
      if (f.key == "default") {
        if (auto v = choice(f, where, transports_)) t.default_transport = *v;
      } else if (f.key == "pipeline_depth") {
        if (auto v = integer(f, where, 1, 4096))
          t.endpoint.pipeline_depth = static_cast<std::uint32_t>(*v);
      } else if (f.key == "max_message_size") {
        if (auto v = integer(f, where, 1, 1LL << 30)) {
          t.endpoint.max_message_size = static_cast<std::uint32_t>(*v);
        }
      } else if (f.key == "recv_buffers") {
        if (auto v = integer(f, where, 1, 65536))
          t.endpoint.recv_buffers = static_cast<std::uint32_t>(*v);
      } else if (f.key == "socket_buffer_kb") {
        if (auto v = integer(f, where, 4, 1LL << 20)) {
          t.endpoint.socket_buffer_bytes = static_cast<std::size_t>(*v) * 1024;
        }
      } else if (f.key == "payload_crc") {
        const auto v = f.value.IsScalar() ? parse_boolean(f.value.Scalar()) : std::nullopt;
        if (v) {
          t.endpoint.payload_crc = *v;
        } else {
          d_.error(f.value.Mark(), fmt::format("'payload_crc' in transports: expected true or "
                                               "false, got {}",
                                               describe_node(f.value)));
        }
      } else if (f.key == "ucx_tls") {
        if (auto v = text(f, where)) t.backends.ucx.tls = *v;
      } else if (f.key == "ofi_provider") {
        if (auto v = text(f, where)) t.backends.ofi.provider = *v;
      } else if (f.key == "mpi_completion") {
        if (auto v = choice(f, where, kMpiCompletions)) t.backends.mpi.completion = *v;
      } else {
        unknown_key(f, where, kTransportKeys);
      }
    }
  }

  // A path that may be given relative to the configuration file's folder.
  std::string beside_config(const std::string& path) const {
    std::filesystem::path p(path);
    if (p.is_relative()) p = std::filesystem::path(parsed_.config.file).parent_path() / p;
    return p.lexically_normal().string();
  }

  std::optional<std::string> absolute_path(const Field& f, const std::string& where) {
    auto v = text(f, where);
    if (v && !std::filesystem::path(*v).is_absolute()) {
      d_.error(f.value.Mark(), fmt::format("'{}' in {}: '{}' is not an absolute path (it is a "
                                           "path on that host)",
                                           f.key, where, *v));
      return std::nullopt;
    }
    return v;
  }

  std::optional<std::vector<std::string>> text_list(const Field& f, const std::string& where) {
    if (!f.value.IsSequence()) {
      d_.error(f.value.Mark(), fmt::format("'{}' in {}: expected a list of strings, got {}", f.key,
                                           where, describe_node(f.value)));
      return std::nullopt;
    }
    std::vector<std::string> out;
    for (const auto& item : f.value) {
      if (!item.IsScalar() || item.Scalar().empty()) {
        d_.error(item.Mark(), fmt::format("'{}' in {}: expected a non-empty string, got {}", f.key,
                                          where, describe_node(item)));
        return std::nullopt;
      }
      out.push_back(item.Scalar());
    }
    return out;
  }

  // `hosts`: a list of {address (one or a list), launcher, and how that launcher reaches it}.
  void hosts(const Field& section) {
    if (section.value.IsNull()) return;
    if (!section.value.IsSequence()) {
      d_.error(section.value.Mark(),
               fmt::format("'hosts' must be a list, got {}", describe_node(section.value)));
      return;
    }
    for (std::size_t i = 0; i < section.value.size(); ++i) host(section.value[i], i);
  }

  void host(const YAML::Node& node, std::size_t i) {
    std::string where = fmt::format("host #{}", i + 1);
    if (!node.IsMap()) {
      d_.error(node.Mark(), fmt::format("{} must be a mapping with address and launcher, got {}",
                                        where, describe_node(node)));
      return;
    }
    HostConfig h;
    h.location = d_.location(node.Mark());
    const auto fields = fields_of(node, where, d_);
    if (const Field* f = find_field(fields, "address")) {
      if (f->value.IsSequence()) {
        if (auto v = text_list(*f, where)) h.addresses = *v;
      } else if (auto v = text(*f, where)) {
        h.addresses = {*v};
      }
      if (h.addresses.size() == 1) where = fmt::format("host '{}'", h.addresses.front());
    } else {
      d_.error(node.Mark(), fmt::format("missing required key 'address' in {} (the contexts' "
                                        "host it describes)",
                                        where));
    }
    for (const Field& f : fields) {
      if (f.key == "address") continue;
      if (f.key == "launcher") {
        if (auto v = choice(f, where, kLaunchers)) {
          h.launcher = static_cast<LauncherKind>(
              std::find(kLaunchers.begin(), kLaunchers.end(), *v) - kLaunchers.begin());
        }
      } else if (f.key == "daqflow") {
        if (auto v = absolute_path(f, where)) h.daqflow = *v;
      } else if (f.key == "workdir") {
        if (auto v = absolute_path(f, where)) h.workdir = *v;
      } else if (f.key == "log_dir") {
        if (auto v = absolute_path(f, where)) h.log_dir = *v;
      } else if (f.key == "control_bind") {
        if (auto v = text(f, where)) {
          if (is_ip_address(*v)) {
            h.control_bind = *v;
          } else {
            d_.error(f.value.Mark(), fmt::format("'control_bind' in {}: '{}' is not an IPv4 or "
                                                 "IPv6 address",
                                                 where, *v));
          }
        }
      } else if (f.key == "lease_s") {
        if (auto v = integer(f, where, 2, 3600)) h.lease_s = static_cast<std::uint32_t>(*v);
      } else if (f.key == "ssh") {
        ssh_settings(f, where, h.ssh);
      } else if (f.key == "supervisor") {
        supervisor_settings(f, where, h.supervisor);
      } else if (f.key == "slurm") {
        slurm_settings(f, where, h.slurm);
      } else {
        unknown_key(f, where, kHostKeys);
      }
    }
    for (const char* section : {"ssh", "supervisor", "slurm"}) {
      const Field* f = find_field(fields, section);
      if (f != nullptr && std::string(to_string(h.launcher)) != section) {
        d_.error(f->key_node.Mark(), fmt::format("'{}' in {}: the host's launcher is {}, not {}",
                                                 section, where, to_string(h.launcher), section));
      }
    }
    for (const auto& address : h.addresses) {
      const std::string canonical = canonical_host(address);
      for (const auto& other : parsed_.config.hosts) {
        for (const auto& a : other.addresses) {
          if (canonical_host(a) == canonical) {
            d_.error(node.Mark(), fmt::format("{}: address '{}' is already described by the host "
                                              "at {}",
                                              where, address, other.location.str()));
          }
        }
      }
    }
    parsed_.config.hosts.push_back(std::move(h));
  }

  void ssh_settings(const Field& section, const std::string& host, SshSettings& ssh) {
    if (!mapping_or_empty(section) || section.value.IsNull()) return;
    const std::string where = "ssh of " + host;
    for (const Field& f : fields_of(section.value, where, d_)) {
      if (f.key == "destination") {
        if (auto v = text(f, where)) ssh.destination = *v;
      } else if (f.key == "user") {
        if (auto v = text(f, where)) ssh.user = *v;
      } else if (f.key == "port") {
        if (auto v = integer(f, where, 1, kMaxPort)) ssh.port = static_cast<std::uint16_t>(*v);
      } else if (f.key == "options") {
        if (auto v = text_list(f, where)) ssh.options = *v;
      } else {
        unknown_key(f, where, kSshKeys);
      }
    }
  }

  void supervisor_settings(const Field& section, const std::string& host, SupervisorSettings& s) {
    if (!mapping_or_empty(section) || section.value.IsNull()) return;
    const std::string where = "supervisor of " + host;
    for (const Field& f : fields_of(section.value, where, d_)) {
      if (f.key == "url") {
        if (auto v = text(f, where)) {
          if (v->rfind("http://", 0) == 0 || v->rfind("https://", 0) == 0) {
            s.url = *v;
          } else {
            d_.error(f.value.Mark(), fmt::format("'url' in {}: '{}' is not an http:// or https:// "
                                                 "URL (supervisord's inet_http_server)",
                                                 where, *v));
          }
        }
      } else if (f.key == "user") {
        if (auto v = text(f, where)) s.user = *v;
      } else if (f.key == "password_file") {
        if (auto v = text(f, where)) s.password_file = beside_config(*v);
      } else {
        unknown_key(f, where, kSupervisorKeys);
      }
    }
  }

  void slurm_settings(const Field& section, const std::string& host, SlurmSettings& s) {
    if (!mapping_or_empty(section) || section.value.IsNull()) return;
    const std::string where = "slurm of " + host;
    for (const Field& f : fields_of(section.value, where, d_)) {
      if (f.key == "node") {
        if (auto v = text(f, where)) s.node = *v;
      } else if (f.key == "partition") {
        if (auto v = text(f, where)) s.partition = *v;
      } else if (f.key == "account") {
        if (auto v = text(f, where)) s.account = *v;
      } else {
        unknown_key(f, where, kSlurmKeys);
      }
    }
  }

  // `restart` of a context: never | on-failure, or a mapping {policy, backoff_ms, ...}.
  void restart_policy(const Field& f, const std::string& where, RestartPolicy& r) {
    const std::vector<std::string> policies{"never", "on-failure"};
    if (f.value.IsScalar()) {
      if (auto v = choice(f, where, policies)) r.on_failure = *v == "on-failure";
      return;
    }
    if (!f.value.IsMap()) {
      d_.error(f.value.Mark(),
               fmt::format("'restart' in {}: expected never, on-failure or a "
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
        if (auto v = integer(g, inner, 0, 3600000))
          r.max_backoff_ms = static_cast<std::uint32_t>(*v);
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

  // `expendable` of a context: true, false, or {group, min} (expendable, counted with the other
  // contexts of the group).
  void expendability(const Field& f, const std::string& where, Expendability& e) {
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

  // `faults`: a list of {from, to, one of delay_ms / cut_ms / stall_ms / corrupt / reset, and
  // when}.
  void faults(const Field& section) {
    if (section.value.IsNull()) return;
    if (!section.value.IsSequence()) {
      d_.error(section.value.Mark(),
               fmt::format("'faults' must be a list, got {}", describe_node(section.value)));
      return;
    }
    for (std::size_t i = 0; i < section.value.size(); ++i) fault(section.value[i], i);
  }

  void fault(const YAML::Node& node, std::size_t i) {
    const std::string where = fmt::format("fault #{}", i + 1);
    if (!node.IsMap()) {
      d_.error(node.Mark(), fmt::format("{} must be a mapping with from, to and one of {}, got {}",
                                        where, join_names(kFaultKinds), describe_node(node)));
      return;
    }
    transport::FaultRule rule;
    FaultMarks marks;
    marks.node = node.Mark();
    std::vector<std::string> kinds;
    std::optional<YAML::Mark> for_mark;
    for (const Field& f : fields_of(node, where, d_)) {
      if (f.key == "from" || f.key == "to") {
        if (auto v = name(f, where)) (f.key == "from" ? marks.from : marks.to) = *v;
        (f.key == "from" ? marks.from_mark : marks.to_mark) = f.value.Mark();
      } else if (f.key == "delay_ms") {
        kinds.push_back(f.key);
        rule.kind = transport::FaultRule::Kind::delay;
        if (auto v = integer(f, where, 1, 3'600'000)) rule.delay = std::chrono::milliseconds(*v);
      } else if (f.key == "cut_ms") {
        kinds.push_back(f.key);
        rule.kind = transport::FaultRule::Kind::cut;
        if (auto v = integer(f, where, 0, 3'600'000)) rule.duration = std::chrono::milliseconds(*v);
      } else if (f.key == "stall_ms") {
        kinds.push_back(f.key);
        rule.kind = transport::FaultRule::Kind::stall;
        if (auto v = integer(f, where, 1, 3'600'000)) rule.duration = std::chrono::milliseconds(*v);
      } else if (f.key == "corrupt" || f.key == "reset") {
        kinds.push_back(f.key);
        rule.kind = f.key == "corrupt" ? transport::FaultRule::Kind::corrupt
                                       : transport::FaultRule::Kind::reset;
        const auto v = f.value.IsScalar() ? parse_boolean(f.value.Scalar()) : std::nullopt;
        if (v != std::optional<bool>(true)) {
          d_.error(f.value.Mark(), fmt::format("'{}' in {}: expected true (leave the fault out "
                                               "otherwise), got {}",
                                               f.key, where, describe_node(f.value)));
        }
      } else if (f.key == "after_messages") {
        if (auto v = integer(f, where, 0, 1LL << 62)) {
          rule.after_messages = static_cast<std::uint64_t>(*v);
        }
      } else if (f.key == "after_ms") {
        if (auto v = integer(f, where, 0, 3'600'000)) rule.after = std::chrono::milliseconds(*v);
      } else if (f.key == "for_ms") {
        for_mark = f.key_node.Mark();
        if (auto v = integer(f, where, 1, 3'600'000)) rule.duration = std::chrono::milliseconds(*v);
      } else {
        unknown_key(f, where, kFaultKeys);
      }
    }
    if (kinds.size() != 1) {
      d_.error(node.Mark(),
               fmt::format("{} must have exactly one of {}, got {}", where, join_names(kFaultKinds),
                           kinds.empty() ? std::string("none") : join_names(kinds)));
    }
    if (for_mark && rule.kind != transport::FaultRule::Kind::delay) {
      d_.error(*for_mark,
               fmt::format("'for_ms' in {}: only a delay lasts for_ms (a cut and a stall "
                           "say how long in cut_ms and stall_ms; a corruption is one "
                           "message, a reset one moment)",
                           where));
    }
    for (const char* key : {"from", "to"}) {
      if (!node[key])
        d_.error(node.Mark(), fmt::format("missing required key '{}' in {}", key, where));
    }
    parsed_.config.faults.push_back(rule);
    parsed_.faults.push_back(std::move(marks));
  }

  void contexts(const Field& section) {
    if (!section.value.IsSequence() || section.value.size() == 0) {
      d_.error(section.value.Mark(), fmt::format("'contexts' must be a list of at least one "
                                                 "context, got {}",
                                                 describe_node(section.value)));
      return;
    }
    for (std::size_t i = 0; i < section.value.size(); ++i) context(section.value[i], i);
  }

  // An IPv4 or IPv6 address (a control port's bind address).
  std::optional<std::string> address(const Field& f, const std::string& where) {
    auto v = text(f, where);
    if (!v) return std::nullopt;
    if (is_ip_address(*v)) return v;
    d_.error(f.value.Mark(), fmt::format("'{}' in {}: '{}' is not an IPv4 or IPv6 address (e.g. "
                                         "0.0.0.0 for every interface, 127.0.0.1 for this host "
                                         "only)",
                                         f.key, where, *v));
    return std::nullopt;
  }

  void context(const YAML::Node& node, std::size_t position) {
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
    if (const Field* f = find_field(fields, "name")) {
      marks.name = f->value.Mark();
      if (auto v = name(*f, where)) {
        ctx.name = *v;
        where = fmt::format("context '{}'", ctx.name);
      }
    } else {
      d_.error(node.Mark(), fmt::format("missing required key 'name' in {}", where));
    }

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

  // Application i listens on data_port + i: the last one must still be a port.
  void check_port_range(std::size_t index, const std::string& where) {
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

  void application(const YAML::Node& node, std::size_t context_index,
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
    if (const Field* f = find_field(fields, "id")) {
      marks.id = f->value.Mark();
      if (auto v = name(*f, where)) {
        app.id = *v;
        where = fmt::format("application '{}'", app.id);
      }
    } else {
      d_.error(node.Mark(), fmt::format("missing required key 'id' in {}", where));
    }
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

  void parameter(const Field& f, const AppType& type, const std::string& where,
                 ApplicationConfig& app, AppMarks& marks) {
    auto spec = std::find_if(type.params.begin(), type.params.end(),
                             [&](const ParamSpec& s) { return s.name == f.key; });
    if (spec == type.params.end()) {
      std::vector<std::string> expected = kAppKeys;
      for (const auto& s : type.params) expected.push_back(s.name);
      unknown_key(f, fmt::format("{} of type '{}'", where, type.name), expected);
      return;
    }
    marks.keys[f.key] = f.key_node.Mark();
    std::vector<ParamIssue> issues;
    const json value = yaml_to_json(f.value, &*spec, f.key, marks, d_);
    app.params[f.key] = check_param(*spec, value, f.key, issues);
    for (const ParamIssue& issue : issues) report(issue, where, marks);
  }

  void report(const ParamIssue& issue, const std::string& where, const AppMarks& marks) {
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

  void defaults(const AppType& type, const std::string& where, ApplicationConfig& app,
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

  const AppRegistry& registry_;
  ParsedConfig& parsed_;
  Diagnostics& d_;
  std::vector<std::string> transports_;
};

}  // namespace

void read_document(const YAML::Node& root, const AppRegistry& registry, ParsedConfig& parsed,
                   Diagnostics& d) {
  Reader(registry, parsed, d).document(root);
}

}  // namespace daqflow::runtime::detail
