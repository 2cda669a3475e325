#pragma once
// Status aggregation: what `daqflow run` prints while a run goes on and what `daqflow status`
// shows of one context. Pure functions and a small stateful rate meter; no I/O.
//
// Rates come from counter deltas between two polls (the applications' `bytes_in` and
// `messages_in` counters, docs/control-api.md), divided by the time between the polls.
// MB means 10^6 bytes.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "daqflow/runtime/fsm.hpp"

namespace daqflow::control {

// The part of an application's GET /api/v1/apps/{id} answer that the status line uses.
struct AppSample {
  std::string id;
  std::string type;
  // The state machine's state; none when the answer names no state this daqflow knows.
  std::optional<runtime::State> state;
  bool finished = false;
  std::uint64_t bytes_in = 0;
  std::uint64_t messages_in = 0;
  // Event-builder counters (docs/event-builder.md): the EVM's totals, a BU's own count.
  std::uint64_t events_built = 0;
  std::uint64_t events_incomplete = 0;
  std::uint64_t events_lost = 0;
  // A builder's (BU, SFC, time-slice builder) events or timeslices its output did not write.
  std::uint64_t not_written = 0;
};

// Reads an application's JSON; missing fields read as empty or 0, an unknown state as none.
[[nodiscard]] AppSample sample_from_json(const nlohmann::json& app);

struct Rates {
  double mb_per_s = 0.0;
  double messages_per_s = 0.0;
  double events_per_s = 0.0;  // built events, from the EVM's events_built
};

// Sums the applications' counter deltas between successive updates. A counter that went down
// (the application was configured again) counts from 0; an application seen for the first time
// contributes nothing until its next update.
class RateMeter {
 public:
  // Records the counters seen at now_ns and returns the rates since the previous update; zero
  // for the first update or when no time passed.
  Rates update(std::int64_t now_ns, const std::vector<AppSample>& samples);

 private:
  struct Last {
    std::uint64_t bytes_in = 0;
    std::uint64_t messages_in = 0;
    std::uint64_t events_built = 0;
  };
  std::optional<std::int64_t> last_ns_;
  std::map<std::string, Last> last_;
};

struct StatusLine {
  double elapsed_s = 0.0;
  int enabled = 0;  // applications in state Enabled
  int total = 0;
  Rates rates;
  // Set when the run has an event builder: the EVM's totals and each BU's built events.
  bool event_builder = false;
  std::uint64_t events_built = 0;
  std::uint64_t events_incomplete = 0;
  std::uint64_t events_lost = 0;
  std::vector<std::pair<std::string, std::uint64_t>> built_per_bu;
  // Every builder's events and timeslices not written (a disk cap): shown whenever not zero.
  std::uint64_t not_written = 0;
};

// "Enabled", or "?" for an unknown state.
[[nodiscard]] std::string state_name(const std::optional<runtime::State>& state);

// Counts the Enabled applications into a status line.
[[nodiscard]] StatusLine make_status_line(double elapsed_s, const std::vector<AppSample>& samples,
                                          Rates rates);

// "  12.0 s  enabled 4/4  1234.56 MB/s  5.68 k msg/s" (no newline, no escape codes), followed
// for an event builder by "  3.10 k ev/s  built 1234 (bu1 600, bu2 634)  incomplete 0  lost 0",
// and by "  NOT WRITTEN 12" once a builder's output has left something out.
[[nodiscard]] std::string format_status_line(const StatusLine& line);

// A message rate with a unit prefix: "950 msg/s", "5.68 k msg/s", "1.23 M msg/s".
[[nodiscard]] std::string format_message_rate(double per_s);

// A byte count for people: "512 B", "1.5 kB", "12.3 MB", "4.20 GB" (powers of 10).
[[nodiscard]] std::string format_bytes(double bytes);

// The table `daqflow status` prints: the context line from GET /api/v1/context, then one row per
// application from GET /api/v1/apps/{id}: id, type, state, messages and bytes in and out, reason.
[[nodiscard]] std::string format_context_table(const nlohmann::json& context,
                                               const std::vector<nlohmann::json>& apps);

}  // namespace daqflow::control
