// daqflow check CONFIG...: validates configuration files without starting anything, so that a
// typo is found at the desk and not at the start of a run.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::cli {

namespace {

struct CheckOptions {
  std::vector<std::string> files;
  bool verbose = false;
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

// Returns how many files failed.
int check(const CheckOptions& options) {
  int failed = 0;
  for (const std::string& file : options.files) {
    auto config = runtime::load_config(file, registry());
    if (!config) {
      fmt::print(stderr, "{}\n", config.error().message());
      ++failed;
      continue;
    }
    fmt::print("{}: ok ({} contexts, {} applications)\n", file, config->contexts.size(),
               config->applications.size());
    if (options.verbose) print_layout(*config);
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
  cmd->footer(
      "Exit status: 0 when every file is valid, 1 otherwise. The keys are described in "
      "docs/configuration.md.");
  cmd->callback([options] {
    if (check(*options) > 0) throw CLI::RuntimeError(1);
  });
}

}  // namespace daqflow::cli
