// daqflow ctl HOST:PORT COMMAND [--app ID] [--wait]: sends one state-machine command to a
// context (every application, in enable order) or to one application of it.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "cli/commands.hpp"
#include "daqflow/control/client.hpp"
#include "daqflow/control/plan.hpp"
#include "daqflow/runtime/access.hpp"
#include "daqflow/runtime/fsm.hpp"

namespace daqflow::cli {

namespace {

struct CtlArgs {
  std::string address;
  std::string token_file;
  std::string command;
  std::string app;
  bool wait = false;
  double timeout_s = 30.0;
};

std::string text_of(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return {};
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void print(const nlohmann::json& answer) {
  std::printf("%s\n", answer.dump(2).c_str());
}

// Polls until every listed application is in the target state; returns the final answer in the
// shape of the command's own answer, with the states reached (and reasons of failures).
nlohmann::json wait_for_target(const control::ControlClient& client, const CtlArgs& args,
                               runtime::State target) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<long>(args.timeout_s * 1000));
  for (;;) {
    nlohmann::json apps = nlohmann::json::array();
    if (!args.app.empty()) {
      auto app = client.get("/api/v1/apps/" + args.app);
      if (!app) fail("ctl", app.error().message());
      apps.push_back(std::move(*app));
    } else {
      auto all = client.get("/api/v1/apps");
      if (!all) fail("ctl", all.error().message());
      if (!all->is_array())
        fail("ctl", client.address().str() + ": GET /api/v1/apps: not a JSON array");
      apps = std::move(*all);
    }
    std::string failed;
    std::string behind;
    nlohmann::json states = nlohmann::json::array();
    for (const auto& a : apps) {
      const auto id = text_of(a, "id");
      const auto text = text_of(a, "state");
      const auto state = runtime::parse_state(text);
      nlohmann::json entry{{"id", id}, {"state", text}};
      if (state && *state == runtime::State::Failed) {
        entry["reason"] = text_of(a, "reason");
        if (failed.empty()) failed = "application " + id + " failed: " + text_of(a, "reason");
      } else if ((!state || *state != target) && behind.empty()) {
        behind = "application " + id + " is still " + text;
      }
      states.push_back(std::move(entry));
    }
    nlohmann::json answer{{"command", args.command}};
    if (!args.app.empty()) {
      answer.update(states.at(0));
    } else {
      answer["applications"] = std::move(states);
    }
    if (!failed.empty()) {
      print(answer);
      fail("ctl", failed);
    }
    if (behind.empty()) return answer;
    if (std::chrono::steady_clock::now() >= deadline) {
      print(answer);
      fail("ctl", args.command + ": " + behind + " after " + std::to_string(args.timeout_s) +
                      " s (waiting for " + runtime::to_string(target) + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void ctl_command(const CtlArgs& args) {
  auto address = control::parse_host_port(args.address);
  if (!address) fail("ctl", address.error().message());
  auto command = runtime::parse_command(args.command);
  if (!command) fail("ctl", command.error().message());
  const runtime::State target = runtime::target_state(*command);

  control::ControlClient client(*address);
  auto token = runtime::token_from(args.token_file);
  if (!token) fail("ctl", token.error().message());
  client.set_token(std::move(*token));
  const std::string path = args.app.empty() ? "/api/v1/fsm/" + args.command
                                            : "/api/v1/apps/" + args.app + "/fsm/" + args.command;
  auto answer = client.post(path);
  if (!answer) fail("ctl", answer.error().message());
  print(args.wait ? wait_for_target(client, args, target) : *answer);
}

}  // namespace

void add_ctl(CLI::App& app) {
  auto args = std::make_shared<CtlArgs>();
  auto* cmd = app.add_subcommand(
      "ctl", "Send a state-machine command to a context (or one application of it)");
  cmd->add_option("address", args->address, "the context's control address, HOST:PORT")->required();
  cmd->add_option("--token-file", args->token_file,
                  "the file of the control token (default: $DAQFLOW_TOKEN, if set)");
  cmd->add_option("command", args->command, "Configure, Enable, Suspend, Resume, Halt or Reset")
      ->required();
  cmd->add_option("--app", args->app, "only this application of the context");
  cmd->add_flag("--wait", args->wait, "wait until the command's target state is reached");
  cmd->add_option("--timeout", args->timeout_s, "seconds --wait waits at most")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([args] { ctl_command(*args); });
}

}  // namespace daqflow::cli
