#pragma once
// Fault injection. Built into the real endpoints (not a test double): abort() makes an endpoint
// fail the way a crashed process would, corrupt_next() flips a bit on the wire. Around any
// endpoint: with_faults() wraps it to delay, cut or stall a link or corrupt a message, as the
// configuration's `faults` say (never on by default), for the failure tests of
// docs/reliability.md.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "daqflow/transport/transport.hpp"

namespace daqflow::transport {

class FaultInjection {
 public:
  virtual ~FaultInjection() = default;
  // Drops every connection at once without a bye, as a crashed process would: peers see an error
  // completion ("connection reset by peer" on tcp, "peer aborted" on inproc), never peer_closed,
  // and sends to this endpoint return closed. Afterwards the endpoint is closed as by close(0):
  // nothing is flushed, every buffer it held is released. Owning thread only.
  virtual void abort() = 0;
  // The next message posted to peer leaves with one bit of its payload CRC flipped, which the
  // receiver's CRC check sees as it would a bit flipped on the wire; the sender's buffer, which
  // it may still hold, is left alone. Owning thread only; only where can_corrupt().
  virtual void corrupt_next(AppIndex /*peer*/) {}
  // Whether corrupt_next() works here: tcp and shm with payload_crc on.
  [[nodiscard]] virtual bool can_corrupt() const { return false; }
  // Resets the connection to peer as a network fault would (a TCP reset from a middlebox, a NIC
  // reset): both ends see an error completion, what was in flight on it is gone, and either may
  // connect() again while both live. Owning thread only; only where can_reset().
  virtual void reset_link(AppIndex /*peer*/) {}
  // Whether reset_link() works here: tcp.
  [[nodiscard]] virtual bool can_reset() const { return false; }
};

// The endpoint's fault-injection hook, or nullptr when its transport has none.
[[nodiscard]] FaultInjection* fault_injection(Endpoint& endpoint);

// One fault on the link from one application to another, from the configuration's `faults`
// (docs/configuration.md). It starts once `after_messages` messages have crossed the link, or
// `after` has passed since the first did (whichever is set; neither: at once), and lasts
// `duration` (zero: to the end).
struct FaultRule {
  enum class Kind : std::uint8_t {
    delay,    // the sender holds each message for `delay` before it leaves
    cut,      // nothing crosses the link, in order, until the cut ends (TCP over a pulled cable
              // put back before its retransmission timeout); duration zero: never again
    stall,    // the receiver takes nothing from the link; its receive buffers fill and the
              // sender is back-pressured, as by a receiving process that stopped reading
    corrupt,  // one message leaves with a flipped bit (FaultInjection::corrupt_next)
    reset,    // the connection is reset once (FaultInjection::reset_link)
  };
  Kind kind = Kind::delay;
  AppIndex from = 0;
  AppIndex to = 0;
  std::uint64_t after_messages = 0;
  std::chrono::milliseconds after{0};
  std::chrono::milliseconds duration{0};
  std::chrono::milliseconds delay{0};  // delay only
};
[[nodiscard]] std::string_view to_string(FaultRule::Kind kind);

// Wraps an endpoint so that the rules on links from or to it apply there: delay, cut, corrupt and
// reset where it sends, stall where it receives. Rules on other links are ignored; without any,
// the endpoint is returned as it was. Fails when a corrupt or reset rule meets an endpoint that
// cannot.
// Messages the wrapper holds count as in flight: with the inner endpoint's, at most
// options.pipeline_depth to a peer before post_send() answers back_pressure.
[[nodiscard]] Result<std::unique_ptr<Endpoint>> with_faults(std::unique_ptr<Endpoint> endpoint,
                                                            const EndpointOptions& options,
                                                            std::span<const FaultRule> rules);

}  // namespace daqflow::transport
