#pragma once
// What the event-builder applications share at Configure: their settings and the shape
// of the builder they belong to, read from the cluster configuration (docs/event-builder.md:
// RUs and BUs learn the builder from the EVM's `rus` and `bus`). Control path only.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "apps/app_support.hpp"
#include "daqflow/apps/fed/event_numbers.hpp"
#include "daqflow/apps/fed/fed_settings.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/data_path.hpp"
#include "daqflow/runtime/settings.hpp"
#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::evb {

// The readout parameters of a RU or the EVM: its FEDs (where their fragments come from) and its
// super-fragment memory.
struct ReadoutParams {
  static const runtime::SettingsSpec<ReadoutParams>& spec();  // readout.settings.yaml

  fed::FedSettings fed;
  std::uint64_t chunk_size = 0;  // a multiple of 64 (checked at Configure)
  std::uint64_t chunks = 0;
};

struct RuSettings {
  static const runtime::SettingsSpec<RuSettings>& spec();  // ru.settings.yaml

  std::string evm;
  ReadoutParams readout;
};

struct EvmSettings {
  static const runtime::SettingsSpec<EvmSettings>& spec();  // evm.settings.yaml

  std::vector<std::string> rus;
  std::vector<std::string> bus;
  double trigger_rate_hz = 0;  // 0: as fast as possible
  std::int64_t heartbeat_timeout_ms = 0;
  std::string event_numbers;  // index or cms
  double lumi_section_s = 0;
  std::uint64_t lumi_section_events = 0;  // 0: by time
  std::uint64_t resync_every = 0;
  ReadoutParams readout;
};

struct BuSettings {
  static const runtime::SettingsSpec<BuSettings>& spec();  // bu.settings.yaml

  std::string evm;
  std::uint32_t events_per_request = 0;
  std::uint32_t blocks_in_flight = 0;
  std::int64_t timeout_ms = 0;
  bool check_crc = false;
  std::string on_incomplete;  // write or fail
  std::int64_t heartbeat_ms = 0;
  std::int64_t evm_redial_ms = 0;
  nlohmann::json output;
};

struct Topology {
  transport::AppIndex evm = 0;
  std::vector<transport::AppIndex> rus;   // the EVM first, then its `rus`, in order
  std::vector<std::uint32_t> ru_feds;     // per RU, its `feds`
  std::vector<transport::AppIndex> bus;   // the EVM's `bus`
  std::vector<std::uint32_t> bu_windows;  // per BU, its `blocks_in_flight`
  std::vector<bool> bu_durable;           // per BU, its output keeps what it writes (file)
  // A BU uses a commit grant of a non-durable output only this long after it asked for it: half
  // the EVM's heartbeat_timeout_ms, so no grant is used once the EVM may have lost the BU.
  std::int64_t grant_lease_ns = 1'000'000'000;
  std::uint32_t max_block_events = 1;   // the largest `events_per_request` of the BUs
  std::size_t evm_block_capacity = 64;  // the EVM's block table
  std::size_t ru_block_capacity = 128;  // a RU's retained blocks: room for acks arriving late
  // Events a RU (or the EVM's trigger) produces ahead of the last assigned one: twice what the
  // BUs can have assigned at once, so that blocks never wait for data, while what is written
  // is still in cache when it is read.
  std::uint64_t lookahead_events = 256;
  // The FEDs' event numbers (the EVM's event_numbers and resync_every).
  fed::EventNumbering numbering = fed::EventNumbering::index;
  std::uint64_t resync_every = 0;
  std::vector<std::string> ids;  // every application id, by index (for messages)
  [[nodiscard]] std::string name(transport::AppIndex index) const;
  // Position of a RU (0 = the EVM), or -1.
  [[nodiscard]] int ru_position(transport::AppIndex index) const;
};

// Resolves the builder of the application being configured (an evm, ru or bu): follows its `evm`
// parameter (or itself for the EVM) and checks that every listed RU and BU has the right type
// and names this EVM, and that the application itself is listed. Errors name the configuration
// file, the application and the parameter.
[[nodiscard]] Result<Topology> resolve_topology(const runtime::AppContext& ctx);

// A data-path handler for the builder's control messages of type Message: decodes the payload
// and calls handle(peer, message, now). A message that does not decode (or has no payload) is
// rejected, counted and dropped; malformed(peer, status), where given, learns of it too (for a
// message the run cannot go on without).
template <class Message, class Handle, class Malformed>
[[nodiscard]] runtime::DataPath::OnMessage decoded(runtime::DataPath& path, Handle handle,
                                                   Malformed malformed) {
  return [path = &path, handle = std::move(handle), malformed = std::move(malformed)](
             transport::Completion& c, std::int64_t now) {
    Message message;
    const std::span<const std::byte> payload =
        c.message.segment_count == 0 ? std::span<const std::byte>() : c.message.segments[0].bytes();
    if (const wire::PayloadStatus s = wire::decode(payload, message);
        s != wire::PayloadStatus::ok) {
      path->reject();
      malformed(c.peer, s);
      return;
    }
    handle(c.peer, message, now);
  };
}

template <class Message, class Handle>
[[nodiscard]] runtime::DataPath::OnMessage decoded(runtime::DataPath& path, Handle handle) {
  return decoded<Message>(path, std::move(handle), [](transport::AppIndex, wire::PayloadStatus) {});
}

}  // namespace daqflow::apps::evb
