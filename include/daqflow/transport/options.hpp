#pragma once
// The transport settings: the options of every endpoint, and what some backends need beyond the
// address table, one set of options per backend. From the configuration's `transports` section
// (docs/configuration.md) and the run; each backend reads its own and ignores the others'.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "daqflow/transport/address.hpp"

namespace daqflow::transport {

struct EndpointOptions {
  AppIndex self = 0;
  std::uint32_t max_message_size = 4u << 20;   // payload bytes
  std::uint32_t pipeline_depth = 8;            // posted, uncompleted sends per peer
  std::uint32_t recv_buffers = 32;             // receive pool buffers (transports that need one)
  std::size_t socket_buffer_bytes = 4u << 20;  // tcp: SO_SNDBUF / SO_RCVBUF
  bool payload_crc = false;                    // compute and check CRC32C of every payload
};

struct UcxOptions {
  // Passed to UCX as UCX_TLS (empty: UCX chooses, e.g. "posix,cma,self" or "tcp").
  std::string tls;
};

struct OfiOptions {
  // The libfabric provider, e.g. "tcp", "tcp;ofi_rxm", "shm", "verbs;ofi_rxm".
  std::string provider = "tcp;ofi_rxm";
};

struct MpiOptions {
  // How the transport thread completes requests: "testsome", "test" or "testall".
  std::string completion = "testsome";
  // The context of each MPI rank, rank order (applications map to ranks by their context).
  std::vector<std::string> contexts;
};

// The sim transport (src/transport/sim/): what a real transport costs the CPU of a host, which
// the simulated network does not do, charged to the sending and receiving applications' hosts.
// From `daqflow bench` on the machine the simulation stands for (docs/simulation.md).
struct SimOptions {
  double send_message_ns = 0;  // per message posted
  double send_byte_ns = 0;     // per payload byte posted
  double recv_message_ns = 0;  // per message received
  double recv_byte_ns = 0;     // per payload byte received
  double poll_ns = 100;        // a poll that finds nothing
  // Bytes a message takes on the wire beyond its payload.
  std::uint32_t overhead_bytes = 40;
  // Phantom payloads: each payload byte stands for this many, on the wire and in the byte costs
  // (a simulated builder of a thousand nodes carries its fragments at a fraction of their size).
  double payload_scale = 1;
};

struct BackendOptions {
  // Names what a run leaves in shared memory (shm segments, the ofi shm provider's regions) with
  // the context and the application, so that what a crashed run left can be found and removed
  // (`daqflow shm`). The executive sets "<run number>.<first context's control port>".
  std::string run_tag = "0";
  UcxOptions ucx;
  OfiOptions ofi;
  MpiOptions mpi;
  SimOptions sim;
};

}  // namespace daqflow::transport
