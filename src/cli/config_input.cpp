// The configuration a launcher sends on standard input (`--config-stdin` of daqflow exec and
// daqflow salvage): one line of JSON, {"yaml": the configuration's text, "token": the control
// token or null}. Neither lands in a file or on a command line of the host.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"

namespace daqflow::cli {

Result<DeliveredConfig> read_delivered_config(const std::string& name) {
  std::string line;
  if (!std::getline(std::cin, line)) {
    return Error(
        "--config-stdin: nothing on standard input (the launcher sends the "
        "configuration " +
        name + " there)");
  }
  const auto bundle = nlohmann::json::parse(line, nullptr, false);
  if (!bundle.is_object() || !bundle.contains("yaml") || !bundle["yaml"].is_string()) {
    return Error(
        "--config-stdin: standard input is not {\"yaml\": ..., \"token\": ...} on one "
        "line");
  }
  DeliveredConfig d{bundle["yaml"].get<std::string>(), std::nullopt};
  if (const auto it = bundle.find("token"); it != bundle.end() && it->is_string()) {
    d.token = it->get<std::string>();
  }
  return d;
}

runtime::ClusterConfig load_command_config(const char* command, const std::string& name,
                                           bool from_stdin, std::optional<std::string>& token,
                                           std::optional<std::uint32_t> run_number) {
  auto config = [&] {
    if (!from_stdin) return runtime::load_config(name, registry());
    auto d = read_delivered_config(name);
    if (!d) fail(command, d.error().message());
    token = std::move(d->token);
    return runtime::parse_config(d->yaml, name, registry());
  }();
  if (!config) fail(command, config.error().message());
  if (run_number) {
    config->run.number = *run_number;
    config->run.number_given = true;
  }
  return std::move(*config);
}

void add_run_number_option(CLI::App* cmd, std::optional<std::uint32_t>& run_number) {
  cmd->add_option("--run-number", run_number,
                  "the run's number, which daqflow run takes from the run registry (replaces "
                  "the configuration's run.number)");
}

}  // namespace daqflow::cli
