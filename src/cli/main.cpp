// daqflow: the command-line entry point. Each subcommand lives in its own file.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "daqflow/apps/builtin.hpp"

namespace daqflow::cli {

runtime::AppRegistry& registry() {
  // The built-in types, and those of the libraries the configurations read name.
  static runtime::AppRegistry types = apps::builtin_registry();
  return types;
}

void fail(std::string_view command, const std::string& why) {
  std::fprintf(stderr, "daqflow %.*s: %s\n", static_cast<int>(command.size()), command.data(),
               why.c_str());
  throw CLI::RuntimeError(1);
}

}  // namespace daqflow::cli

int main(int argc, char** argv) {
  CLI::App app{"daqflow: data acquisition for physics experiments"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "daqflow 0.1.0");
  daqflow::cli::add_check(app);
  daqflow::cli::add_exec(app);
  daqflow::cli::add_run(app);
  daqflow::cli::add_runs(app);
  daqflow::cli::add_stop(app);
  daqflow::cli::add_logs(app);
  daqflow::cli::add_ctl(app);
  daqflow::cli::add_status(app);
  daqflow::cli::add_dump(app);
  daqflow::cli::add_fedsend(app);
  daqflow::cli::add_transports(app);
  daqflow::cli::add_shm(app);
  daqflow::cli::add_bench(app);
  daqflow::cli::add_salvage(app);
  daqflow::cli::add_report(app);
  daqflow::cli::add_convert(app);
  daqflow::cli::add_sim(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "daqflow: %s\n", e.what());
    return 1;
  }
  return 0;
}
