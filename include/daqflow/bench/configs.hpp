#pragma once
// The cluster configurations `daqflow bench` runs, generated as YAML text in the format of
// docs/configuration.md and loaded by the same loader as `daqflow run`.
//
// Ports: context k (0-based, file order) gets control port base + 3k and data ports from
// base + 3k + 1 (at most two applications per context), so a configuration of n contexts uses
// base .. base + 3n - 1.

#include <cstdint>
#include <string>
#include <vector>

namespace daqflow::bench {

// Settings every generated configuration shares.
struct ClusterSettings {
  std::string transport = "tcp";
  int port_base = 11000;
  std::string output_dir = "./run-data";  // run.output
  std::uint32_t pipeline_depth = 8;
  std::uint64_t max_message_size = 4u << 20;
  std::string idle = "backoff";  // idle strategy of every application
  std::string ucx_tls;           // "" = not set
  std::string ofi_provider;      // "" = not set
  // CPUs the applications' agent threads are pinned to (`cpu:`), round robin in file order:
  // with {0, 1} a 1-to-1 stream's source runs on CPU 0 and its sink on CPU 1. Empty: not pinned.
  std::vector<int> cpus;
};

// The options of `daqflow bench` that reproduce the settings beyond transport, idle and ports:
// " --ucx-tls ... --ofi-provider '...' --cpus 0,1", each only when set.
[[nodiscard]] std::string cluster_options(const ClusterSettings& c);

// Ports a configuration of `contexts` contexts takes from the base.
[[nodiscard]] constexpr int ports_used(int contexts) {
  return 3 * contexts;
}

struct RoundtripShape {
  std::uint64_t min_size = 64;
  std::uint64_t max_size = 4u << 20;
  std::uint64_t iterations = 1000;
  std::uint64_t warmup = 50;
  std::uint64_t fit_min_size = 8192;
  std::uint64_t fit_max_size = 524288;
};
// Two contexts: initiator rt0, responder rt1.
[[nodiscard]] std::string roundtrip_yaml(const ClusterSettings& cluster,
                                         const RoundtripShape& shape);

// Stream patterns: 1to1, 1toN (one source, n sinks), Nto1 (n sources, one sink), nton (the
// two-stage pattern: n sources, each sending to all of n sinks, every application its own
// context), nxn (the single-stage pattern: n nodes, each a source and a sink in one context;
// every source sends to every sink, its own node's included).
struct StreamShape {
  std::string pattern = "1to1";
  int n = 1;  // ignored by 1to1
  // nton: the sinks, when not n (the event builder's reference: its readouts to its BUs).
  int receivers = 0;
  std::uint64_t message_size = 1u << 20;
  std::uint32_t depth = 8;
  std::string verify = "ends";
  bool fill = false;  // ends: the sources write every byte all the same (source's fill)
  int sample_interval_ms = 200;
};
[[nodiscard]] bool known_pattern(const std::string& pattern);
// How many sources and sinks a pattern has for n.
[[nodiscard]] int stream_senders(const std::string& pattern, int n);
[[nodiscard]] int stream_receivers(const std::string& pattern, int n);
[[nodiscard]] int stream_contexts(const std::string& pattern, int n);
[[nodiscard]] std::string stream_yaml(const ClusterSettings& cluster, const StreamShape& shape);

// The event builder: `rus` readouts (the EVM counts as the first) and `bus` BUs, each its own
// context; or, with rubu, `rus` nodes each hosting a readout (node 0: the EVM) and a BU. BUs
// discard the events they build; FED fragments are lognormal with sd = mean / 2.
struct EvbShape {
  int rus = 3;
  int bus = 2;
  bool rubu = false;
  int feds_per_ru = 8;
  std::uint64_t fragment_mean = 2048;
  std::uint32_t events_per_request = 32;
  std::uint32_t blocks_in_flight = 4;  // per BU
  double trigger_rate_hz = 0;          // the EVM's limit; 0: as fast as the builder goes
  // The readout memory of every RU (and the EVM); 0: the applications' defaults.
  std::uint64_t chunk_size = 0;
  std::uint32_t chunks = 0;
  // Every readout's fragments from this readout plugin (the emulator's own behind the plugin
  // ABI, bench/readout/); empty: the built-in emulator.
  std::string readout_plugin;
};
[[nodiscard]] int evb_contexts(const EvbShape& shape);
// The largest fragment the emulator draws for a mean, and the message size a block needs.
[[nodiscard]] std::uint64_t evb_fragment_max(std::uint64_t mean);
// Phantom payloads (daqflow sim --payload-scale): the mean fragment generated to stand for one of
// `mean` bytes, 1/scale of it rounded down to 8 bytes, at least 64.
[[nodiscard]] std::uint64_t phantom_fragment(std::uint64_t mean, double scale);
[[nodiscard]] std::uint64_t evb_max_message_size(const EvbShape& shape);
// The raw stream a builder is measured against: its readouts' processes (the EVM's included)
// sending to its BUs' processes (RUBU: every node to every node, nxn), each message the size
// of a readout's part of a block (its header, one entry per event, events_per_request
// super-fragments of the mean size), at the builder's depth (as many messages in flight to
// each sink as a BU keeps blocks in flight, blocks_in_flight). The work per byte is the
// builder's: the sources write every byte of their messages, as the FED emulators write their
// fragments, and the sinks check the messages' ends only, as the BUs do not read payloads
// (check_crc is off).
[[nodiscard]] StreamShape evb_stream_shape(const EvbShape& shape);
// What evb_stream_shape is, in words, for result files.
inline constexpr const char* kEvbStreamReference =
    "the raw stream of the same shape: the readouts' processes to the BUs' processes (RUBU: "
    "nxn), messages of the size of a readout's part of a block, the same transport and depth; "
    "the sources write every byte of their messages (as the FED emulators write their "
    "fragments), the sinks check their ends only (as the BUs do not read payloads)";
[[nodiscard]] std::string evb_yaml(const ClusterSettings& cluster, const EvbShape& shape);

// The filter farm: an SFC generating events, `workers` workers, several per context. Processing
// times are waited by the workers, not spent; slow_factor > 1 makes the last worker that many times
// slower.
struct FarmShape {
  std::string policy = "tokens";
  int workers = 20;
  int workers_per_context = 5;
  std::uint32_t event_size = 32768;
  std::uint32_t window = 2;
  double accept_fraction = 0.005;
  std::uint32_t output_bytes = 65536;
  double time_us = 0;  // processing time of every event (fixed)
  double slow_factor = 1;
};
[[nodiscard]] int farm_contexts(const FarmShape& shape);
// Ports a farm configuration takes from the base (every application has a data port).
[[nodiscard]] int farm_ports_used(const FarmShape& shape);
[[nodiscard]] std::string farm_yaml(const ClusterSettings& cluster, const FarmShape& shape);

// Time-slice building all to all: n nodes, each an input (ts_input, microslices as fast as taken,
// no CRC) and a builder (ts_builder, discard output) in one context, as the stream pattern nxn
// places a source and a sink; timeslice k goes to builder k mod n. A contribution carries
// `microslices` microslices of core and one of overlap, together `contribution_bytes` of content.
// Scheduled runs add a clock master in a context of its own and a clock client in every node, so
// that the slots are those of the synchronised clock.
struct TimesliceShape {
  int n = 4;
  std::uint64_t contribution_bytes = 65536;
  int microslices = 7;  // of the core; the overlap is one more
  std::string order = "chaotic";
  double slot_us = 0;  // scheduled: length of a fixed slot; 0: in the builders' turns
  bool crc = true;     // the inputs compute CRC-32C and the builders check it
  // No inputs or builders: the clock master and clients alone (the precision without data).
  bool clock_only = false;
  // Scheduled: the clock master and clients that synchronise the nodes' clocks (a simulation
  // needs none: its applications read one clock).
  bool clock_sync = true;
  // A ts_manager in a context of its own assigns the timeslices (to the builder with the fewest
  // in flight) and grants their writes: the control traffic of time-slice building, point to
  // point with the builders and from the manager to every input. Without: round robin.
  bool manager = false;
  // Timeslices an input keeps until acknowledged (0: the application's default). A timeslice
  // is acknowledged when complete, after every input has sent its part: to keep its link busy
  // an input needs about n of them.
  int in_flight = 0;
};
// The size of one contribution on the wire: its component descriptor, the microslice
// descriptors and the contents.
[[nodiscard]] std::uint64_t timeslice_contribution_wire_bytes(const TimesliceShape& shape);
[[nodiscard]] int timeslice_contexts(const TimesliceShape& shape);
// Ports a configuration takes from the base (every application has a data port).
[[nodiscard]] int timeslice_ports_used(const TimesliceShape& shape);
[[nodiscard]] std::string timeslice_yaml(const ClusterSettings& cluster,
                                         const TimesliceShape& shape);

}  // namespace daqflow::bench
