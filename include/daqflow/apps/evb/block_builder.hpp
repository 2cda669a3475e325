#pragma once
// The BU's block building (docs/event-builder.md, flow step 4): it gathers one block's parts
// (the `block` messages of every RU), checks them and turns them into built events for the
// output. Pure state: the BU application feeds it received messages and a clock reading, so it
// runs in tests without sockets.
//
// A part is kept as received: its buffers move into the builder (no copy) and later into the
// output::OutputBatch, whose events are lists of pieces pointing into them. A block is ready when
// every RU's part is in, or when timeout_ns has passed since its first part (the missing RUs'
// events are then incomplete), or at once for RUs known to be lost. Each event is checked in every
// part it has: the super-fragment is walked from its last trailer as wire::walk_super_fragment does
// (super_fragment_check.hpp, all of a block's walks interleaved), which checks that the fragments
// fill exactly the size in the block's table, that the RU's FED count matches, and that every
// fragment's L1 id is the event id modulo 2^24 (so all RUs agree on the event; the id is the
// event's number, or its CMS id, as the EVM assigned it), and the FED CRCs when check_crc is set. A
// failed check flags the event corrupted; it is still built (counted, never dropped).
//
// Message layout accepted: the descriptor at the start of the first segment; each super-fragment
// within one segment (every daqflow transport and RU delivers that). A super-fragment that
// straddles segments is flagged corrupted rather than copied.
//
// Threading: one thread (the BU's agent). Nothing allocates after create(), except the text of
// the first problem of a build (a failure path).

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daqflow/apps/fed/emulator.hpp"
#include "daqflow/apps/fed/super_fragment_check.hpp"
#include "daqflow/apps/output/output.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/transport/transport.hpp"
#include "daqflow/wire/evb.hpp"
#include "daqflow/wire/fed.hpp"

namespace daqflow::apps::evb {

struct BuilderSettings {
  std::vector<transport::AppIndex> rus;  // the EVM first, then the EVM's rus, in order
  std::vector<std::uint32_t> feds;       // per RU: fragments in each super-fragment; 0: unchecked
  std::vector<std::string> ru_names;     // per RU: how problems name it (empty: "RU #position")
  std::uint32_t slots = 4;               // blocks gathered at once (blocks_in_flight)
  std::uint32_t max_block_events = 32;
  std::int64_t timeout_ns = 2'000'000'000;
  bool check_fragments = true;
  bool check_crc = false;
};

enum class PartOutcome : std::uint8_t {
  first,      // the first part of a new block: a slot was taken
  added,      // a further part of a block being gathered
  duplicate,  // this RU's part of the block is already in: dropped
  late,       // the block was built or dropped already (at this generation): dropped
  unknown,    // the sender is not a RU of this builder: dropped
  malformed,  // the descriptor does not decode or disagrees with the block: dropped
  no_slot,    // a new block while every slot is taken: more blocks than requested
};

struct BuildResult {
  std::uint64_t block_id = 0;
  std::uint32_t generation = 0;  // the highest among the parts
  std::uint32_t built = 0;       // events with every part (corrupted ones included)
  std::uint32_t incomplete = 0;  // events missing a part
  std::uint32_t corrupted = 0;
  std::uint64_t bytes = 0;
  std::int64_t first_ns = 0;  // when its first part arrived
  int missing_ru = -1;        // position of the first RU whose part is missing
  std::uint32_t missing_count = 0;
  std::string problem;  // the first corruption: event, RU, what (empty if none)
};

class BlockBuilder {
 public:
  [[nodiscard]] static Result<std::unique_ptr<BlockBuilder>> create(BuilderSettings settings);

  // Takes message's buffers when the outcome is first or added; otherwise leaves them (the
  // caller drops them). detail receives the decode problem of a malformed part (ok: the
  // descriptor decodes but names another RU than the sender).
  [[nodiscard]] PartOutcome on_part(transport::AppIndex from, transport::Message& message,
                                    std::int64_t now_ns, wire::PayloadStatus* detail = nullptr);
  // A slot ready to build, or -1.
  [[nodiscard]] int ready(std::int64_t now_ns) const;
  // Builds the slot's events into batch (cleared first; its buffers receive the parts'), and
  // frees the slot.
  BuildResult build(int slot, output::OutputBatch& batch);
  // The RU at this position sends nothing more: blocks stop waiting for it.
  void ru_lost(std::size_t position);

  [[nodiscard]] std::uint32_t open() const { return open_; }
  // What the open blocks wait for, e.g. "block 12 waits for RU 'ru2'" (the first few), for a
  // halt that timed out; empty when none is open.
  [[nodiscard]] std::string describe_open() const;
  [[nodiscard]] std::size_t ru_count() const { return settings_.rus.size(); }
  [[nodiscard]] int position_of(transport::AppIndex ru) const;
  [[nodiscard]] const BuilderSettings& settings() const { return settings_; }
  // Capacities an output::OutputBatch needs for one block.
  [[nodiscard]] std::size_t max_pieces() const;
  [[nodiscard]] std::size_t max_buffers() const;
  // Drops every held part.
  void clear();
  // Drops every block being gathered (the BU was fenced: they are no longer its own); their
  // parts arriving later are late. Returns how many blocks.
  std::uint32_t drop_open();

 private:
  struct Part {
    bool present = false;
    transport::Message message;
    std::uint32_t descriptor_size = 0;
    std::uint32_t generation = 0;
  };
  struct Slot {
    bool used = false;
    std::uint64_t id = 0;
    std::uint64_t first = 0;
    std::uint32_t count = 0;
    std::uint64_t first_id = 0;  // the events' ids and luminosity section, as assigned
    std::uint32_t lumi = 0;
    std::uint32_t received = 0;
    std::int64_t first_ns = 0;
    std::vector<Part> parts;                // by RU position
    std::vector<wire::BlockEntry> entries;  // RU position * max_block_events + event
  };

  // Where a part's next super-fragment starts, while building.
  struct Cursor {
    std::uint8_t segment = 0;
    std::uint32_t offset = 0;
  };

  explicit BlockBuilder(BuilderSettings settings);
  [[nodiscard]] bool complete(const Slot& s) const;
  // Moves the cursor past `size` bytes of the message, across segments (an event that
  // straddles them, which is flagged corrupted).
  static void skip(Cursor& c, const transport::Message& message, std::uint32_t size);
  void check_pieces(output::OutputBatch& batch, BuildResult& r);
  [[nodiscard]] std::string ru_name(std::size_t position) const;

  BuilderSettings settings_;
  std::vector<int> position_;  // by AppIndex
  std::vector<bool> lost_;     // by RU position
  std::uint32_t lost_count_ = 0;
  std::vector<Slot> slots_;
  std::uint32_t open_ = 0;
  std::vector<wire::BlockEntry> scratch_;
  std::vector<Cursor> cursors_;  // by RU position
  struct Recent {
    std::uint64_t id = 0;
    std::uint32_t generation = 0;
  };
  void remember(std::uint64_t id, std::uint32_t generation);
  std::array<Recent, 64> recent_{};  // the last blocks built or dropped, for late parts
  std::size_t recent_next_ = 0;
  std::size_t recent_count_ = 0;
  // The super-fragments of the block being built, checked together (super_fragment_check.hpp).
  std::vector<fed::SuperFragmentJob> jobs_;
  std::vector<std::uint32_t> job_event_;  // index in the batch
  std::vector<std::uint16_t> job_ru_;     // RU position
  std::vector<fed::SuperFragmentVerdict> verdicts_;
};

}  // namespace daqflow::apps::evb
