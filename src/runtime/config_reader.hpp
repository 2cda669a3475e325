#pragma once
// The configuration's reader (config_parse.hpp: read_document): the document -> the ClusterConfig
// model, key by key, in three files: config_parse.cpp (the document, scalars, the run,
// transports, monitoring and access sections), config_parse_hosts.cpp (hosts and their
// launchers, faults), config_parse_contexts.cpp (contexts, their restart and expendability,
// applications and their parameters).

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/config_parse.hpp"
#include "runtime/param_check.hpp"

namespace daqflow::runtime::detail {

inline const std::vector<std::string> kTopKeys{"libraries",  "run",      "transports",
                                               "monitoring", "access",   "hooks",
                                               "hosts",      "contexts", "faults"};
inline const std::vector<std::string> kHookKeys{
    "timeout_s",    "before_configure", "after_configure", "before_enable",
    "after_enable", "before_halt",      "after_halt"};
inline const std::vector<std::string> kHostKeys{"address",    "launcher",     "daqflow", "workdir",
                                                "log_dir",    "control_bind", "lease_s", "ssh",
                                                "supervisor", "slurm"};
inline const std::vector<std::string> kLaunchers{"local", "ssh", "supervisor", "slurm"};
inline const std::vector<std::string> kSshKeys{"destination", "user", "port", "options"};
inline const std::vector<std::string> kSupervisorKeys{"url", "user", "password_file"};
inline const std::vector<std::string> kSlurmKeys{"node", "partition", "account"};
inline const std::vector<std::string> kRestartKeys{"policy", "backoff_ms", "max_backoff_ms",
                                                   "max_restarts"};
inline const std::vector<std::string> kMonitoringKeys{"interval_ms", "history_s", "max_series"};
inline const std::vector<std::string> kAccessKeys{"token_file", "protect_reads"};
inline const std::vector<std::string> kFaultKeys{
    "from",    "to",    "delay_ms",       "cut_ms",   "stall_ms",
    "corrupt", "reset", "after_messages", "after_ms", "for_ms"};
inline const std::vector<std::string> kFaultKinds{"delay_ms", "cut_ms", "stall_ms", "corrupt",
                                                  "reset"};
inline const std::vector<std::string> kRunKeys{"number", "output", "registry"};
inline const std::vector<std::string> kTransportKeys{
    "default",     "pipeline_depth", "max_message_size", "recv_buffers",  "socket_buffer_kb",
    "payload_crc", "ucx_tls",        "ofi_provider",     "mpi_completion"};
inline const std::vector<std::string> kMpiCompletions{"testsome", "test", "testall"};
inline const std::vector<std::string> kContextKeys{"name",       "host",         "control_port",
                                                   "data_port",  "control_bind", "restart",
                                                   "expendable", "applications"};
inline const std::vector<std::string> kExpendableKeys{"group", "min"};
inline const std::vector<std::string> kAppKeys{"type", "id", "transport", "cpu", "idle"};
inline const std::vector<std::string> kIdleStrategies{"spin", "yield", "backoff", "block"};

inline constexpr long long kMaxPort = 65535;

// Whether text is an IPv4 or IPv6 address.
[[nodiscard]] bool is_ip_address(const std::string& text);
[[nodiscard]] const Field* find_field(const std::vector<Field>& fields, std::string_view key);

class Reader {
 public:
  Reader(const AppRegistry& registry, AppRegistry* extensible, ParsedConfig& parsed, Diagnostics& d)
      : registry_(registry), extensible_(extensible), parsed_(parsed), d_(d) {
    for (std::string_view name : transport::transport_names()) transports_.emplace_back(name);
  }

  void document(const YAML::Node& root);

 private:
  void unknown_key(const Field& f, const std::string& where,
                   const std::vector<std::string>& expected);

  // A mapping that may be left empty (`run:`); anything else is an error.
  bool mapping_or_empty(const Field& f);
  std::optional<long long> integer(const Field& f, const std::string& where, long long min,
                                   long long max);
  std::optional<std::string> text(const Field& f, const std::string& where);
  std::optional<std::string> name(const Field& f, const std::string& where);
  // The name an item (a context, an application) must have, under `key`: once read, `where`
  // names the item by it ("context 'src'") and `mark` is where the name stands.
  std::optional<std::string> item_name(const std::vector<Field>& fields, const char* key,
                                       const YAML::Node& node, const char* kind, std::string& where,
                                       YAML::Mark& mark);
  std::optional<std::string> choice(const Field& f, const std::string& where,
                                    const std::vector<std::string>& choices);
  static std::string did_you_mean(const std::string& v, const std::vector<std::string>& choices);
  // `libraries`: loaded into extensible_ (paths relative to the configuration's folder).
  void libraries(const Field& f);
  void run_settings(const Field& section);
  void monitoring_settings(const Field& section);
  void access_settings(const Field& section);
  void hooks_settings(const Field& section);
  void transport_settings(const Field& section);

  // A path that may be given relative to the configuration file's folder.
  std::string beside_config(const std::string& path) const;
  std::optional<std::string> absolute_path(const Field& f, const std::string& where);
  std::optional<std::vector<std::string>> text_list(const Field& f, const std::string& where);

  // A section that is a list (`hosts`, `faults`): each item read by `item`, with its position.
  void list_section(const Field& section, void (Reader::*item)(const YAML::Node&, std::size_t));

  // A host of `hosts`: {address (one or a list), launcher, and how that launcher reaches it}.
  void host(const YAML::Node& node, std::size_t i);
  void ssh_settings(const Field& section, const std::string& host, SshSettings& ssh);
  void supervisor_settings(const Field& section, const std::string& host, SupervisorSettings& s);
  void slurm_settings(const Field& section, const std::string& host, SlurmSettings& s);

  // `restart` of a context: never | on-failure, or a mapping {policy, backoff_ms, ...}.
  void restart_policy(const Field& f, const std::string& where, RestartPolicy& r);

  // `expendable` of a context: true, false, or {group, min} (expendable, counted with the other
  // contexts of the group).
  void expendability(const Field& f, const std::string& where, Expendability& e);

  // A fault of `faults`: {from, to, one of delay_ms / cut_ms / stall_ms / corrupt / reset, and
  // when}.
  void fault(const YAML::Node& node, std::size_t i);
  void contexts(const Field& section);

  // An IPv4 or IPv6 address (a control port's bind address).
  std::optional<std::string> address(const Field& f, const std::string& where);
  void context(const YAML::Node& node, std::size_t position);

  // Application i listens on data_port + i: the last one must still be a port.
  void check_port_range(std::size_t index, const std::string& where);
  void application(const YAML::Node& node, std::size_t context_index,
                   const std::string& context_where, std::size_t position);
  void parameter(const Field& f, const AppType& type, const std::string& where,
                 ApplicationConfig& app, AppMarks& marks);
  void report(const ParamIssue& issue, const std::string& where, const AppMarks& marks);
  void defaults(const AppType& type, const std::string& where, ApplicationConfig& app,
                const AppMarks& marks);

  const AppRegistry& registry_;
  AppRegistry* extensible_;  // registry_, when it takes the libraries' types
  ParsedConfig& parsed_;
  Diagnostics& d_;
  std::vector<std::string> transports_;
};

}  // namespace daqflow::runtime::detail
