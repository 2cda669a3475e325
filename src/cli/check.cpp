// daqflow check CONFIG...: validates configuration files without starting anything, so that a
// typo is found at the desk and not at the start of a run; with --preflight, also makes the
// pre-flight checks of `daqflow run` on every host (control/preflight.hpp). --host-checks is
// what a host runs for those, through its launcher.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "daqflow/control/preflight.hpp"
#include "daqflow/control/process.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::cli {

namespace {

struct CheckOptions {
  std::vector<std::string> files;
  bool verbose = false;
  bool json = false;
  bool preflight = false;
  // --host-checks: this host's part of the pre-flight checks, as one line of JSON.
  bool host_checks = false;
  std::vector<std::string> contexts;
  std::string host;
  bool config_stdin = false;
};

// What the executives will make of the file: every application's address, and which contexts
// share a process because inproc links join them.
void print_layout(const runtime::ClusterConfig& config) {
  const transport::AddressTable table = config.address_table();
  for (const runtime::ContextConfig& ctx : config.contexts) {
    fmt::print("  context {} at {}, control port {}\n", ctx.name, ctx.host, ctx.control_port);
    for (runtime::AppIndex index : ctx.applications) {
      const runtime::ApplicationConfig& app = config.applications[index];
      fmt::print("    [{}] {} ({}) via {}, data port {}\n", app.index, app.id, app.type,
                 app.transport, table[index].data_port);
    }
  }
  fmt::print("  processes:");
  for (const auto& group : config.process_groups(registry())) {
    fmt::print(" [{}]", fmt::join(group, ", "));
  }
  fmt::print("\n");
}

// The file as clients need it (the Python package's Cluster): its contexts, where their control
// ports are, their applications, and the token's file.
nlohmann::json layout_json(const std::string& file, const runtime::ClusterConfig& config) {
  nlohmann::json contexts = nlohmann::json::array();
  for (const runtime::ContextConfig& ctx : config.contexts) {
    nlohmann::json apps = nlohmann::json::array();
    for (runtime::AppIndex index : ctx.applications) {
      const runtime::ApplicationConfig& app = config.applications[index];
      const runtime::AppType* type = registry().find(app.type);
      apps.push_back(
          {{"id", app.id}, {"type", app.type}, {"rank", type != nullptr ? type->enable_rank : 0}});
    }
    contexts.push_back({{"name", ctx.name},
                        {"host", ctx.host},
                        {"control_port", ctx.control_port},
                        {"applications", std::move(apps)}});
  }
  const std::string& token = config.access.token_file;
  return {{"file", file},
          {"ok", true},
          {"contexts", std::move(contexts)},
          {"token_file", token.empty() ? nlohmann::json(nullptr) : nlohmann::json(token)}};
}

// The pre-flight checks of every host of the file's run; false when any found a problem.
bool preflight(const std::string& file, const runtime::ClusterConfig& config) {
  auto self = control::self_executable();
  if (!self) fail("check", self.error().message());
  auto problems = control::preflight(config, registry(), file, *self);
  if (!problems) {
    fmt::print(stderr, "{}: pre-flight checks: {}\n", file, problems.error().message());
    return false;
  }
  for (const auto& p : *problems) fmt::print(stderr, "{}: pre-flight: {}\n", file, p.str());
  if (problems->empty()) fmt::print("{}: pre-flight checks ok\n", file);
  return problems->empty();
}

void host_checks(const CheckOptions& options) {
  if (options.files.size() != 1) fail("check", "--host-checks takes one configuration");
  std::optional<std::string> token;
  const runtime::ClusterConfig config =
      load_command_config("check", options.files.front(), options.config_stdin, token, {});
  std::vector<std::string> contexts = options.contexts;
  if (contexts.empty()) {
    for (const auto& ctx : config.contexts) contexts.push_back(ctx.name);
  }
  const nlohmann::json out = control::check_this_host(
      config, registry(), contexts, options.host.empty() ? "this host" : options.host);
  fmt::print("{}\n", out.dump());
}

// Returns how many files failed.
int check(const CheckOptions& options) {
  int failed = 0;
  for (const std::string& file : options.files) {
    auto config = runtime::load_config(file, registry());
    if (!config) {
      if (options.json) {
        fmt::print(
            "{}\n",
            nlohmann::json{{"file", file}, {"ok", false}, {"error", config.error().message()}}
                .dump());
      } else {
        fmt::print(stderr, "{}\n", config.error().message());
      }
      ++failed;
      continue;
    }
    if (options.json) {
      fmt::print("{}\n", layout_json(file, *config).dump());
      continue;
    }
    fmt::print("{}: ok ({} contexts, {} applications)\n", file, config->contexts.size(),
               config->applications.size());
    if (options.verbose) print_layout(*config);
    std::fflush(stdout);
    if (options.preflight && !preflight(file, *config)) ++failed;
    // Keep the order of files when stdout and stderr go to one terminal.
    std::fflush(stdout);
  }
  return failed;
}

}  // namespace

void add_check(CLI::App& app) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand(
      "check", "Validate configuration files: every error is printed as FILE:LINE:COLUMN: what");
  cmd->add_option("CONFIG", options->files, "Cluster configuration files (YAML)")->required();
  cmd->add_flag("-v,--verbose", options->verbose,
                "Also print each application's address and the processes the contexts form");
  cmd->add_flag("--json", options->json,
                "Print one line of JSON per file: its contexts (host, control port, "
                "applications with their enable ranks) and its token's file, or its error");
  cmd->add_flag("--preflight", options->preflight,
                "Also make the pre-flight checks of daqflow run on every host: ports free, room "
                "in /dev/shm and on the output disks, hosts answering with this daqflow build");
  cmd->add_flag("--host-checks", options->host_checks,
                "This host's part of the pre-flight checks, as one line of JSON (what daqflow "
                "run asks each host for through its launcher)")
      ->group("");
  cmd->add_option("--context", options->contexts, "--host-checks: the contexts of this host")
      ->group("");
  cmd->add_option("--host", options->host, "--host-checks: the host's name in the problems")
      ->group("");
  cmd->add_flag("--config-stdin", options->config_stdin,
                "--host-checks: the configuration comes on standard input")
      ->group("");
  cmd->footer(
      "Exit status: 0 when every file is valid (and passes its pre-flight checks), 1 "
      "otherwise. The keys are described in docs/configuration.md; the pre-flight checks in "
      "docs/operations.md.");
  cmd->callback([options] {
    if (options->host_checks) return host_checks(*options);
    if (check(*options) > 0) throw CLI::RuntimeError(1);
  });
}

}  // namespace daqflow::cli
