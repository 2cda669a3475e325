// daqflow status HOST:PORT [--json]: one context, its applications, their states and main
// metrics.
#include "daqflow/control/status.hpp"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "daqflow/control/client.hpp"
#include "daqflow/runtime/access.hpp"

namespace daqflow::cli {

namespace {

struct StatusArgs {
  std::string address;
  std::string token_file;
  bool json = false;
};

void status_command(const StatusArgs& args) {
  auto address = control::parse_host_port(args.address);
  if (!address) fail("status", address.error().message());
  control::ControlClient client(*address);
  auto token = runtime::token_from(args.token_file);
  if (!token) fail("status", token.error().message());
  client.set_token(std::move(*token));

  auto context = client.get("/api/v1/context");
  if (!context) fail("status", context.error().message());
  std::vector<nlohmann::json> apps;
  if (context->is_object() && context->contains("applications") &&
      (*context)["applications"].is_array()) {
    for (const auto& a : (*context)["applications"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_string()) continue;
      const auto id = a["id"].get<std::string>();
      auto app = client.get("/api/v1/apps/" + id);
      if (!app) fail("status", app.error().message());
      apps.push_back(std::move(*app));
    }
  }

  if (args.json) {
    const nlohmann::json out{{"context", *context}, {"applications", apps}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("%s", control::format_context_table(*context, apps).c_str());
  }
}

}  // namespace

void add_status(CLI::App& app) {
  auto args = std::make_shared<StatusArgs>();
  auto* cmd = app.add_subcommand("status", "Show a context's applications, states and metrics");
  cmd->add_option("address", args->address, "the context's control address, HOST:PORT")->required();
  cmd->add_option("--token-file", args->token_file,
                  "the file of the control token (default: $DAQFLOW_TOKEN, if set)");
  cmd->add_flag("--json", args->json, "print the raw JSON instead of a table");
  cmd->callback([args] { status_command(*args); });
}

}  // namespace daqflow::cli
