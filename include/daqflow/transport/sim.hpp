#pragma once
// What the simulator (src/sim/) asks of the sim transport's endpoints beyond the Endpoint
// interface (the transport itself: src/transport/sim/sim_endpoint.hpp).

#include <chrono>
#include <cstdint>

#include "daqflow/transport/transport.hpp"

namespace daqflow::transport::sim {

// The CPU time of the simulator's thread that the endpoint spent in simulator calls, during which
// other actors ran: the simulator leaves it out of the CPU time it measures for an application.
// 0 for an endpoint of another transport.
[[nodiscard]] std::int64_t simulator_cpu_ns(const Endpoint& endpoint);

// The CPU time the endpoint has charged to its host for the transport's work (SimOptions' costs
// per message and byte, and empty polls), in nanoseconds. 0 for an endpoint of another transport.
[[nodiscard]] double transport_cpu_ns(const Endpoint& endpoint);

// The bytes the endpoint has put on the simulated wire: in all (payloads as scaled for phantom
// payloads, headers, data and control messages), and the payloads of the messages that carry
// data (stream data, blocks, farm events, time-slice contributions). 0 for an endpoint of another
// transport.
struct WireBytes {
  double total = 0;
  double data = 0;
};
[[nodiscard]] WireBytes wire_bytes_sent(const Endpoint& endpoint);

// Wakes the actor that waits on the endpoint (Endpoint::wait returns), as a signal wakes a real
// agent: the run state of its application changed. No effect on an endpoint of another transport.
void wake(Endpoint& endpoint);

// Whether the endpoints count the CPU time spent in simulator calls (simulator_cpu_ns): needed
// only when the simulator measures the applications' CPU time, and a system call each way
// otherwise spent for nothing. On by default; for the whole process (one simulation per process).
void count_simulator_cpu(bool on);

// Closes the endpoint as close() does, but without a bye to its peers: for the end of a
// simulated run, when every peer is halted or halting (the RUs of a thousand-node builder would
// say a quarter of a million byes at one simulated instant to applications that no longer
// listen, each walked through SimGrid's per-actor lists).
void close_quietly(Endpoint& endpoint, std::chrono::milliseconds timeout);

// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID): with SimGrid's contexts every actor
// runs on the simulator's one thread, so between simulator calls it is the running actor's.
[[nodiscard]] std::int64_t thread_cpu_ns();

}  // namespace daqflow::transport::sim
