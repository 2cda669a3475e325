// Hooks before and after the run's transitions (hooks.hpp).
#include "hooks.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "daqflow/control/process.hpp"

namespace daqflow::control {

namespace {

// The last lines a command printed, for the reason it failed.
std::string last_lines(const std::string& out, int lines) {
  std::string text = out;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::size_t at = text.size();
  for (int n = 0; n < lines && at != std::string::npos && at > 0; ++n) {
    at = text.rfind('\n', at - 1);
  }
  if (at != std::string::npos && at < text.size()) text.erase(0, at + 1);
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  return text;
}

}  // namespace

const std::vector<std::string>& hook_commands(const runtime::HooksSettings& hooks,
                                              std::string_view transition, std::string_view when) {
  static const std::vector<std::string> kNone;
  const runtime::HooksSettings::Commands* c = transition == "configure" ? &hooks.configure
                                              : transition == "enable"  ? &hooks.enable
                                              : transition == "halt"    ? &hooks.halt
                                                                        : nullptr;
  if (c == nullptr) return kNone;
  return when == "before" ? c->before : c->after;
}

std::vector<TransitionRecord> run_hooks(const runtime::ClusterConfig& config,
                                        std::string_view transition, std::string_view when,
                                        const HookContext& context) {
  std::vector<TransitionRecord> records;
  const std::string dir = std::filesystem::path(context.config_path).parent_path().string();
  const std::chrono::seconds timeout(config.hooks.timeout_s);
  for (const std::string& command : hook_commands(config.hooks, transition, when)) {
    const auto at = std::chrono::system_clock::now();
    const auto started = std::chrono::steady_clock::now();
    // env(1) sets the folder and the environment; the command is the shell's.
    const std::vector<std::string> argv{
        "env",
        "-C",
        dir.empty() ? "." : dir,
        "DAQFLOW_RUN_NUMBER=" + std::to_string(config.run.number),
        "DAQFLOW_TRANSITION=" + std::string(transition),
        "DAQFLOW_HOOK=" + std::string(when),
        "DAQFLOW_CONFIG=" + context.config_path,
        "DAQFLOW_RUN_OUTPUT=" + config.run.output,
        std::string("DAQFLOW_RUN_STATUS=") + (context.failed_so_far ? "failed" : "ok"),
        "/bin/sh",
        "-c",
        command};
    auto ran = run_command(argv, timeout);
    TransitionRecord r;
    r.at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
    r.transition = std::string(transition);
    r.application = std::string(when) + ": " + command;
    r.duration_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    if (!ran) {
      r.outcome = "failed";
      r.reason = ran.error().code() == ErrorCode::timed_out
                     ? fmt::format("did not finish within {} s", config.hooks.timeout_s)
                     : ran.error().message();
    } else if (!ran->status.clean()) {
      r.outcome = "failed";
      const std::string said = last_lines(ran->out, 5);
      r.reason = ran->status.str() + (said.empty() ? "" : ": " + said);
    } else {
      r.outcome = "ok";
    }
    const bool failed = r.outcome != "ok";
    records.push_back(std::move(r));
    if (failed && when == "before") break;
  }
  return records;
}

}  // namespace daqflow::control
