// The run's transition reports (run_state.hpp): each application's part in each transition, and
// the hooks around them, a line each on the console and a record each in the summary.
#include <fmt/format.h>

#include "control/hooks.hpp"
#include "control/run_state.hpp"

namespace daqflow::control::detail {

// Each application's part in a transition: ok when it reached the state, else why not. One line
// each on the console, and in the summary.
void Run::report(const TransitionWait& wait, std::chrono::milliseconds timeout,
                 const Result<void>& result) {
  const std::string name = wait.target == runtime::State::Ready     ? "configure"
                           : wait.target == runtime::State::Enabled ? "enable"
                           : wait.target == runtime::State::Halted  ? "halt"
                                                                    : "transition";
  const double waited = wait.ms_since_start();
  for (std::size_t i = 0; i < wait.apps.size(); ++i) {
    const PlannedApp& app = wait.apps[i];
    const View& v = view(app.id);
    TransitionRecord t{wait.started_ms, name, app.id, "ok", wait.reached[i].value_or(waited), ""};
    if (!wait.reached[i]) {
      if (v.state == runtime::State::Failed) {
        t.outcome = "failed";
        t.reason = v.reason;
      } else if (!reachable(app.context)) {
        t.outcome = "lost";
        const auto silent = silent_.find(app.context);
        t.reason = silent != silent_.end()
                       ? "context " + app.context + " went silent: " + silent->second
                   : cluster_ && !cluster_->alive(app.context)
                       ? "context " + app.context + " died: " + cluster_->death_of(app.context)
                       : "context " + app.context + " died or went silent";
      } else if (!result && result.error().code() == ErrorCode::timed_out) {
        t.outcome = "no answer";
        t.reason = "still " + state_name(v.state) + " after " + seconds(timeout);
      } else {
        t.outcome = "not reached";
        t.reason = result ? std::string() : result.error().message();
      }
    }
    record(std::move(t));
  }
}

void Run::record(TransitionRecord t) {
  reporter_.note(fmt::format("{} {}: {} ({:.1f} ms){}", t.transition, t.application, t.outcome,
                             t.duration_ms, t.reason.empty() ? "" : ": " + t.reason));
  summary_.transitions.push_back(std::move(t));
}

Result<void> Run::hooks(std::string_view transition, std::string_view when) {
  for (TransitionRecord& t :
       run_hooks(config_, transition, when, {options_.config_path, !summary_.ok()})) {
    const bool refused = t.outcome != "ok" && when == "before";
    std::string why = refused ? fmt::format("the hook before {} failed ({}): {}", transition,
                                            t.application.substr(when.size() + 2), t.reason)
                              : std::string();
    record(std::move(t));
    if (refused) return Error(ErrorCode::conflict, std::move(why));
  }
  return ok();
}

}  // namespace daqflow::control::detail
