// daqflow salvage CONFIG APP: what `daqflow run` does by itself when a process dies while data
// flows (AppType::after_loss), for an operator who runs the contexts by hand: for a BU with a
// file output, finish its unfinished files and tell the EVM which of its blocks in doubt are on
// disk (docs/reliability.md). Run it on the host where the application ran, once its process is
// gone, while the rest of the run goes on.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "daqflow/control/client.hpp"
#include "daqflow/runtime/access.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::cli {

namespace {

struct SalvageArgs {
  std::string config;
  std::string app;
  bool config_stdin = false;
  bool json = false;
  std::optional<std::uint32_t> run_number;
};

void salvage_command(const SalvageArgs& args) {
  std::optional<std::string> delivered_token;
  const runtime::ClusterConfig cluster = load_command_config(
      "salvage", args.config, args.config_stdin, delivered_token, args.run_number);
  const runtime::ApplicationConfig* app = cluster.find_application(args.app);
  if (app == nullptr) fail("salvage", "no application '" + args.app + "' in " + args.config);
  const runtime::AppType* type = registry().find(app->type);
  if (type == nullptr || !type->after_loss) {
    fail("salvage", runtime::application_named(args.app) + " is a " + app->type +
                        ": nothing is left to salvage when it dies");
  }
  auto token =
      delivered_token ? Result<std::string>(*delivered_token) : runtime::access_token(cluster);
  if (!token) fail("salvage", token.error().message());
  const auto call = [&](const std::string& id, const std::string& action,
                        const nlohmann::json& body) -> Result<nlohmann::json> {
    const runtime::ApplicationConfig* target = cluster.find_application(id);
    if (target == nullptr) return Error("no application '" + id + "' in " + args.config);
    const runtime::ContextConfig* ctx = cluster.find_context(target->context);
    if (ctx == nullptr || ctx->control_port == 0)
      return Error("context '" + target->context + "' has no control_port");
    control::ControlClient client(
        control::HostPort{ctx->host, static_cast<std::uint16_t>(ctx->control_port)});
    client.set_token(*token);
    auto answer = client.post("/api/v1/apps/" + id + "/actions/" + action, body);
    if (!answer) return answer.error();
    return answer->value("result", nlohmann::json::object());
  };
  auto done = type->after_loss(runtime::LostApp{cluster, *app, call});
  if (!done) fail("salvage", done.error().message());
  const std::string report = done->report.empty() ? "nothing to salvage" : done->report;
  if (args.json) {
    std::printf("%s\n",
                nlohmann::json{{"report", report}, {"results", done->results}}.dump().c_str());
  } else {
    std::printf("%s\n", report.c_str());
  }
}

}  // namespace

void add_salvage(CLI::App& app) {
  auto args = std::make_shared<SalvageArgs>();
  auto* cmd = app.add_subcommand(
      "salvage", "Settle what a dead application left (a BU: its files against the EVM)");
  cmd->add_option("config", args->config, "the cluster configuration")->required();
  cmd->add_option("app", args->app, "the application whose process died")->required();
  add_run_number_option(cmd, args->run_number);
  cmd->add_flag("--config-stdin", args->config_stdin,
                "read the configuration (and the control token) from standard input, as daqflow "
                "exec does (what daqflow run's launchers send)");
  cmd->add_flag("--json", args->json,
                "print one line of JSON: {\"report\": what was done, \"results\": the "
                "application's results as its files now hold them}");
  cmd->callback([args] { salvage_command(*args); });
}

}  // namespace daqflow::cli
