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

// The run an endpoint belongs to. Every connection's hello carries it, and a hello from another
// run is refused (EndpointStats::strangers): a process of an earlier run still dialing its old
// peers, or of a cluster whose configuration names this one's addresses, is never taken for the
// application it names. number: the configuration's run number; key: a random value that
// `daqflow run` draws for each run and hands every executive with Configure (0 when none was
// handed, e.g. executives configured by hand).
struct RunIdentity {
  std::uint32_t number = 0;
  std::uint64_t key = 0;
  friend bool operator==(const RunIdentity&, const RunIdentity&) = default;
};

struct EndpointOptions {
  AppIndex self = 0;
  std::uint32_t max_message_size = 4u << 20;   // payload bytes
  std::uint32_t pipeline_depth = 8;            // posted, uncompleted sends per peer
  std::uint32_t recv_buffers = 32;             // receive pool buffers (transports that need one)
  std::size_t socket_buffer_bytes = 4u << 20;  // tcp: SO_SNDBUF / SO_RCVBUF
  bool payload_crc = false;                    // compute and check CRC32C of every payload
  // One send_done (Completion::count > 1) for the messages to a peer that completed together, for
  // an application that only counts its sends: at millions of small messages a second, a
  // completion each costs the sender more than the send. Set by the application, not the file.
  bool coalesce_send_done = false;
  // Set by the executive from the run, not by the application or the file.
  RunIdentity run;
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
  // Phantom payloads: each payload byte of a message that carries data (stream data, a block of
  // super-fragments, a farm event, a time-slice contribution) stands for this many, on the wire
  // and in the byte costs (a simulated builder of a thousand nodes carries its fragments at a
  // fraction of their size); control messages travel at their own size.
  double payload_scale = 1;
  // The same for control messages (requests, assignments, acknowledgements, credits): each of
  // their payload bytes stands for this many, for a study of data mixed with a given share of
  // control traffic (such as ~10%).
  double control_scale = 1;
  // How messages cross the simulated network:
  //   flow: SimGrid's network model, every transfer a flow sharing its links' bandwidth with
  //         the others (max-min), re-solved whenever one starts or ends;
  //   fifo: every link a queue that sends one message at a time, in the order they reach it,
  //         cut through from link to link: a transfer costs the simulator a timer per hop, not
  //         a new solution of every flow's share (a thousand-node builder's cost grows with its
  //         messages, not with their square).
  enum class Network : std::uint8_t { flow, fifo };
  Network network = Network::flow;
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
