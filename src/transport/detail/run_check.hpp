#pragma once
// The run a connection's hello names (RunIdentity: sequence holds the run number, tag the key),
// and the log of hellos from another run, which every endpoint refuses and counts
// (EndpointStats::strangers).

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "daqflow/transport/options.hpp"
#include "daqflow/wire/header.hpp"

namespace daqflow::transport::detail {

inline void stamp_run(wire::MessageHeader& hello, const RunIdentity& run) {
  hello.sequence = run.number;
  hello.tag = run.key;
}

[[nodiscard]] inline bool same_run(const wire::MessageHeader& hello, const RunIdentity& run) {
  return hello.sequence == run.number && hello.tag == run.key;
}

// What a hello claims, for messages (a number beyond 32 bits is shown cut).
[[nodiscard]] inline RunIdentity run_of(const wire::MessageHeader& hello) {
  return {static_cast<std::uint32_t>(hello.sequence), hello.tag};
}

// Warns of a refused hello the first time a claim comes from an address, and then at most once
// a minute with the count refused meanwhile: a leftover process dials again and again, and its
// refusals must not drown the log. The rest go to the debug level.
class StrangerLog {
 public:
  // transport: its name; self: the endpoint's application; from: where the hello came from, as
  // far as the transport knows it; claimed_app: the application the hello names.
  void refused(std::string_view transport, std::string_view self, std::string_view from,
               std::string_view claimed_app, const RunIdentity& claimed, const RunIdentity& ours);

 private:
  std::string last_;  // the address and claim of the last warning
  std::chrono::steady_clock::time_point last_at_{};
  std::uint64_t quiet_ = 0;  // refused since the last warning
};

}  // namespace daqflow::transport::detail
