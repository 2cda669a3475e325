#pragma once
// The subcommands of the daqflow CLI. Each add_* adds one subcommand with its options and a
// callback; a callback that fails throws CLI::RuntimeError(exit_code) after printing why.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "daqflow/core/result.hpp"
#include "daqflow/runtime/application.hpp"

namespace daqflow::cli {

// What a launcher sends on standard input with --config-stdin (src/cli/config_input.cpp).
struct DeliveredConfig {
  std::string yaml;
  std::optional<std::string> token;
};
[[nodiscard]] Result<DeliveredConfig> read_delivered_config(const std::string& name);
// The cluster configuration `name`: read from the file, or, with from_stdin, as a launcher
// delivers it (then `token` is the control token it came with); run_number, the run's number
// `daqflow run` gives (--run-number), replaces the configuration's. Errors end `command`.
[[nodiscard]] runtime::ClusterConfig load_command_config(
    const char* command, const std::string& name, bool from_stdin,
    std::optional<std::string>& token, std::optional<std::uint32_t> run_number = std::nullopt);
// Adds --run-number to an executive's command (exec, salvage).
void add_run_number_option(CLI::App* cmd, std::optional<std::uint32_t>& run_number);

// Prints "daqflow COMMAND: WHY" on standard error and ends the subcommand with exit code 1.
[[noreturn]] void fail(std::string_view command, const std::string& why);

// Every built-in application type, and those of the libraries that configurations read so far
// name (`libraries`).
runtime::AppRegistry& registry();

void add_check(CLI::App& app);       // daqflow check CONFIG
void add_exec(CLI::App& app);        // daqflow exec CONFIG --context NAME
void add_run(CLI::App& app);         // daqflow run CONFIG [--duration S] [--summary FILE]
void add_runs(CLI::App& app);        // daqflow runs list|show N|comment N TEXT
void add_ctl(CLI::App& app);         // daqflow ctl HOST:PORT COMMAND [--app ID]
void add_status(CLI::App& app);      // daqflow status HOST:PORT
void add_dump(CLI::App& app);        // daqflow dump FILE|DIR... [--events] [--json]
void add_fedsend(CLI::App& app);     // daqflow fedsend HOST:PORT --fed ID [--feds N] ...
void add_transports(CLI::App& app);  // daqflow transports
void add_shm(CLI::App& app);         // daqflow shm list|clean [--run TAG] [--all-dead]
void add_bench(CLI::App& app);       // daqflow bench
void add_salvage(CLI::App& app);     // daqflow salvage CONFIG APP
void add_logs(CLI::App& app);        // daqflow logs CONFIG [--context C] [--follow]
void add_stop(CLI::App& app);        // daqflow stop CONFIG
void add_sim(CLI::App& app);         // daqflow sim [CONFIG] --platform star|FILE ...
void add_report(CLI::App& app);      // daqflow report DIR [--output FILE]
void add_convert(CLI::App& app);     // daqflow convert FILE|DIR... --to FORMAT --out DIR
                                     // roundtrip|stream|evb|compare|memcpy ...

}  // namespace daqflow::cli
