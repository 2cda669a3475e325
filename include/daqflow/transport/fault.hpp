#pragma once
// Fault injection built into the real endpoints (not a test double): the conformance suite and
// fault tests use it to make an endpoint fail the way a crashed process would, so that its peers'
// handling of a lost peer can be checked without killing a process.

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
};

// The endpoint's fault-injection hook, or nullptr when its transport has none.
[[nodiscard]] FaultInjection* fault_injection(Endpoint& endpoint);

}  // namespace daqflow::transport
