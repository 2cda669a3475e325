#include "control/restarts.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace daqflow::control {

namespace {

std::string seconds_text(std::chrono::milliseconds d) {
  return fmt::format("{:g} s", static_cast<double>(d.count()) / 1000.0);
}

}  // namespace

void Restarts::schedule(const std::string& context, const runtime::RestartPolicy& policy,
                        bool clean, Clock::time_point now) {
  if (!policy.on_failure || clean) return;
  std::uint32_t& count = counts_[context];
  if (count >= policy.max_restarts) {
    host_.note(
        fmt::format("context {} was started again {} time(s), its max_restarts: it "
                    "stays lost",
                    context, count));
    return;
  }
  ++count;
  const std::uint64_t backoff = std::min<std::uint64_t>(
      std::uint64_t{policy.backoff_ms} << std::min(count - 1, 20U), policy.max_backoff_ms);
  host_.note(fmt::format("context {}: restart {} of {} in {} ms (restart: on-failure)", context,
                         count, policy.max_restarts, backoff));
  Restart r;
  r.context = context;
  r.policy = policy;
  r.attempt = count;
  r.due = now + std::chrono::milliseconds(backoff);
  restarts_.push_back(std::move(r));
}

std::vector<std::string> Restarts::step(Clock::time_point now) {
  std::vector<std::string> rejoined;
  std::vector<Restart> again;  // attempts that failed, scheduled once the loop is done
  for (auto it = restarts_.begin(); it != restarts_.end();) {
    Restart& r = *it;
    if (r.phase != Restart::Phase::waiting && !host_.alive(r.context)) {
      it = restarts_.erase(it);  // it died again: the run reports it and decides
      continue;
    }
    std::string failed;
    switch (advance(r, now, failed)) {
      case Outcome::going_on:
        ++it;
        break;
      case Outcome::rejoined: {
        const std::string text = fmt::format("context {} restarted ({} of {}) and rejoins the run",
                                             r.context, r.attempt, r.policy.max_restarts);
        host_.note(text);
        rejoined.push_back(text);
        it = restarts_.erase(it);
        break;
      }
      case Outcome::failed:
        host_.note("restarting context " + r.context + " failed: " + failed);
        if (host_.alive(r.context)) host_.kill(r.context);
        again.push_back(std::move(r));
        it = restarts_.erase(it);
        break;
    }
  }
  for (const Restart& r : again) schedule(r.context, r.policy, false, now);
  return rejoined;
}

Restarts::Outcome Restarts::advance(Restart& r, Clock::time_point now, std::string& failed) {
  using Phase = Restart::Phase;
  const std::vector<std::string> group = host_.group_of(r.context);
  switch (r.phase) {
    case Phase::waiting:
      if (now < r.due) return Outcome::going_on;
      if (auto started = host_.start_again(r.context); !started) {
        failed = started.error().message();
        return Outcome::failed;
      }
      host_.note("context " + r.context + ": started again");
      r.phase = Phase::starting;
      r.deadline = now + timeouts_.reach;
      return Outcome::going_on;
    case Phase::starting:
      if (!host_.answers(r.context)) {
        if (now < r.deadline) return Outcome::going_on;
        failed = "its control port did not answer within " + seconds_text(timeouts_.reach);
        return Outcome::failed;
      }
      if (auto c = host_.send_configure(group); !c) {
        failed = c.error().message();
        return Outcome::failed;
      }
      r.phase = Phase::configuring;
      r.deadline = now + timeouts_.configure;
      return Outcome::going_on;
    case Phase::configuring:
    case Phase::enabling: {
      const bool configuring = r.phase == Phase::configuring;
      const runtime::State target = configuring ? runtime::State::Ready : runtime::State::Enabled;
      auto reached = host_.reached(group, target);
      if (!reached) {
        failed = reached.error().message();
        return Outcome::failed;
      }
      if (!*reached) {
        if (now < r.deadline) return Outcome::going_on;
        failed = std::string("its applications did not reach ") + runtime::to_string(target) +
                 " within " +
                 seconds_text(configuring ? timeouts_.configure : timeouts_.transition);
        return Outcome::failed;
      }
      if (!configuring) return Outcome::rejoined;
      if (auto e = host_.send_enable(group); !e) {
        failed = e.error().message();
        return Outcome::failed;
      }
      r.phase = Phase::enabling;
      r.deadline = now + timeouts_.transition;
      return Outcome::going_on;
    }
  }
  return Outcome::going_on;
}

bool Restarts::restarting(const std::string& context) const {
  for (const auto& r : restarts_) {
    const auto group = host_.group_of(r.context);
    if (std::find(group.begin(), group.end(), context) != group.end()) return true;
  }
  return false;
}

std::uint32_t Restarts::attempts(const std::string& context) const {
  const auto it = counts_.find(context);
  return it == counts_.end() ? 0 : it->second;
}

}  // namespace daqflow::control
