#include "transport/detail/run_check.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace daqflow::transport::detail {

void StrangerLog::refused(std::string_view transport, std::string_view self, std::string_view from,
                          std::string_view claimed_app, const RunIdentity& claimed,
                          const RunIdentity& ours) {
  // The keys stay out of the log: they are what a process must know to join the run.
  const std::string claim =
      fmt::format("a connection from {} claiming to be '{}' of run {}{}", from, claimed_app,
                  claimed.number, claimed.number == ours.number ? " under another run key" : "");
  const auto now = std::chrono::steady_clock::now();
  if (claim == last_ && now - last_at_ < std::chrono::minutes(1)) {
    ++quiet_;
    spdlog::debug("{} endpoint of '{}': refused {}", transport, self, claim);
    return;
  }
  const std::string since = quiet_ == 0
                                ? std::string()
                                : fmt::format(" ({} more refused since the last warning)", quiet_);
  spdlog::warn(
      "{} endpoint of '{}': refused {}: this endpoint belongs to run {}, and a process of "
      "another run (an earlier one still dialing, or a cluster whose configuration names this "
      "one's addresses) never joins it{}",
      transport, self, claim, ours.number, since);
  last_ = claim;
  last_at_ = now;
  quiet_ = 0;
}

}  // namespace daqflow::transport::detail
