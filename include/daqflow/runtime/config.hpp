#pragma once
// The cluster configuration (docs/configuration.md): one YAML file for the whole cluster, the same
// file for every process. load_config() validates it strictly; every error names file:line:column
// and the key or value at fault.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/transport/address.hpp"
#include "daqflow/transport/fault.hpp"
#include "daqflow/transport/options.hpp"

namespace daqflow::runtime {

class AppRegistry;
using transport::AppIndex;

struct SourceLocation {
  std::string file;
  int line = 0;                           // 1-based
  int column = 0;                         // 1-based
  [[nodiscard]] std::string str() const;  // "file:line:column"
};

struct RunSettings {
  // The run's number: the configuration's own (number_given), else the one the run registry
  // gives `daqflow run`, which hands it to every executive (daqflow exec --run-number).
  std::uint32_t number = 1;
  bool number_given = false;
  std::string output = "./run-data";
  // The run registry (an SQLite file, relative to the configuration's folder, or a
  // postgresql:// URI); empty: the default place (control::default_registry_location).
  std::string registry;
};

// The `hooks` section: commands `daqflow run` runs before and after each transition of the run
// (docs/operations.md, Hooks), each through /bin/sh in the configuration file's folder.
struct HooksSettings {
  struct Commands {
    std::vector<std::string> before;
    std::vector<std::string> after;
  };
  std::uint32_t timeout_s = 60;  // each command's limit
  Commands configure;
  Commands enable;
  Commands halt;
};

// The `monitoring` section: how each executive samples its applications' metrics into the
// history served at GET /api/v1/history (docs/monitoring.md). The history's memory is taken
// once, at start: samples x series values.
struct MonitoringSettings {
  std::uint32_t interval_ms = 1000;  // between samples
  std::uint32_t history_s = 3600;    // how far back the history reaches
  std::uint32_t max_series = 256;    // metrics kept per context (application x metric)
};

// The `access` section (docs/control-api.md, Access): who may change things through the control
// ports. Without a token anyone who reaches a port may; a context whose control_bind is not a
// loopback address must have one.
struct AccessSettings {
  // The file holding the bearer token (relative: to the configuration file's folder); empty:
  // the environment variable DAQFLOW_TOKEN, if set.
  std::string token_file;
  bool protect_reads = false;  // reads need the token too (but the dashboard's own files)
};

// The `transports` section: the one place of the transport settings.
struct TransportSettings {
  std::string default_transport = "tcp";  // inproc | tcp | ...
  // What every endpoint is created with (each application's own index set as self).
  transport::EndpointOptions endpoint;
  // What the backends need beyond it (ucx, ofi, mpi; the run tag is the executive's).
  transport::BackendOptions backends;
};

// The `hosts` section (docs/deployment.md): how `daqflow run` reaches the host of a context and
// starts its executive there. A context whose host has no entry is started on this machine.
enum class LauncherKind { local, ssh, supervisor, slurm };
[[nodiscard]] const char* to_string(LauncherKind kind);

struct SshSettings {
  std::string destination;           // what ssh connects to; empty: the host's address
  std::string user;                  // empty: ssh's own choice (the current user, ~/.ssh/config)
  std::uint16_t port = 0;            // 0: ssh's own choice (22)
  std::vector<std::string> options;  // passed to ssh before the destination ("-i", "KEY", ...)
};

struct SupervisorSettings {
  std::string url;            // the XML-RPC server; empty: http://ADDRESS:9001/RPC2
  std::string user;           // basic authentication, when supervisord asks for it
  std::string password_file;  // relative: to the configuration file's folder
};

struct SlurmSettings {
  std::string node;       // the Slurm node name; empty: the host's address
  std::string partition;  // empty: the cluster's default
  std::string account;
};

struct HostConfig {
  std::vector<std::string> addresses;  // the contexts' `host` values this entry covers
  LauncherKind launcher = LauncherKind::local;
  std::string daqflow;  // the executable on the host; empty: the controller's own path
  std::string workdir;  // where its executives start; relative paths of the configuration
                        // (run.output) resolve there; empty: /tmp/daqflow
  std::string log_dir;  // where its executives write their logs there; empty: WORKDIR/logs
  // The default control_bind of its contexts: the controller reaches them from elsewhere. Empty:
  // the context's host for a launcher other than local.
  std::string control_bind;
  // An executive started elsewhere ends itself when the controller has not renewed its lease
  // for this long (no orphans when the controller dies); `daqflow run --attach` renews it.
  std::uint32_t lease_s = 20;
  SshSettings ssh;
  SupervisorSettings supervisor;
  SlurmSettings slurm;
  SourceLocation location;
};

// A context's restart policy (`restart:` in a context): never, or on-failure with a back-off
// doubling from backoff_ms up to max_backoff_ms, at most max_restarts times in a run.
// Whether the run survives the loss of a context (`expendable:` in a context). By default the
// types of its applications decide (BUs, workers, builders are survivable); `false` makes its
// loss end the run; a group names contexts of which at least `min` must be left.
struct Expendability {
  std::optional<bool> expendable;  // none: as its applications' types say
  std::string group;               // contexts counted together ("" : none)
  std::uint32_t min = 0;           // the run fails when fewer of the group are left
};

struct RestartPolicy {
  bool on_failure = false;
  std::uint32_t backoff_ms = 500;
  std::uint32_t max_backoff_ms = 10000;
  std::uint32_t max_restarts = 5;
};

struct ApplicationConfig {
  AppIndex index = 0;            // position in the cluster's address table
  std::string type;              // registry name: "source", "sink", "roundtrip", ...
  std::string id;                // unique in the cluster
  std::string context;           // name of the hosting context
  std::string transport;         // the transport its endpoint uses (default_transport unless set)
  std::optional<int> cpu;        // pin its agent to this CPU
  std::string idle = "backoff";  // agent idle strategy
  nlohmann::json params;         // validated, defaults filled in
  SourceLocation location;
};

struct ContextConfig {
  std::string name;
  std::string host = "127.0.0.1";
  std::uint16_t control_port = 0;
  // The address the control port listens on: the loopback unless opened (needs a token).
  std::string control_bind = "127.0.0.1";
  std::uint16_t data_port = 0;  // base: application i of this context listens on data_port + i
  std::vector<AppIndex> applications;
  RestartPolicy restart;
  Expendability expendable;
  SourceLocation location;
};

struct ClusterConfig {
  std::string file;
  // Libraries of application types (runtime/app_library.hpp), loaded before the applications
  // were read; absolute paths, the same on every host.
  std::vector<std::string> libraries;
  RunSettings run;
  TransportSettings transports;
  MonitoringSettings monitoring;
  AccessSettings access;
  HooksSettings hooks;
  std::vector<HostConfig> hosts;
  std::vector<ContextConfig> contexts;
  std::vector<ApplicationConfig> applications;  // indexed by AppIndex
  // The `faults` section: faults to inject on links, for failure tests; empty unless written.
  std::vector<transport::FaultRule> faults;

  [[nodiscard]] const ApplicationConfig* find_application(std::string_view id) const;
  [[nodiscard]] const ContextConfig* find_context(std::string_view name) const;
  // The `hosts` entry of a context's host; nullptr: none (started on this machine).
  [[nodiscard]] const HostConfig* host_of(const ContextConfig& context) const;
  // The contexts hosting an application on the mpi transport, in file order: MPI rank i runs
  // the i-th (transport::MpiOptions::contexts; `daqflow run` starts them with one mpirun).
  [[nodiscard]] std::vector<std::string> mpi_contexts() const;
  // The address table every transport of every process shares.
  [[nodiscard]] transport::AddressTable address_table() const;
  // Contexts that must share a process because an inproc link joins their applications:
  // groups of context names, each group in configuration order.
  [[nodiscard]] std::vector<std::vector<std::string>> process_groups(
      const AppRegistry& registry) const;
};

// Reads and validates a configuration file. Given a registry it can change, the types of the
// configuration's `libraries` are loaded into it first (a program that hosts them: check, run,
// exec); given a const one, a configuration that names libraries is refused.
[[nodiscard]] Result<ClusterConfig> load_config(const std::string& path,
                                                const AppRegistry& registry);
[[nodiscard]] Result<ClusterConfig> load_config(const std::string& path, AppRegistry& registry);
// Same from text (tests); file names the text in messages.
[[nodiscard]] Result<ClusterConfig> parse_config(const std::string& text, const std::string& file,
                                                 const AppRegistry& registry);
[[nodiscard]] Result<ClusterConfig> parse_config(const std::string& text, const std::string& file,
                                                 AppRegistry& registry);

}  // namespace daqflow::runtime
