#pragma once
// Event numbers as CMS counts them (XDAQ event builder, EvBidFactory), beside daqflow's own.
//
// Inside the builder an event is always its index k on every stream: the k-th fragment of each
// FED, the k-th trigger of the EVM. What the FEDs write into their headers (the 24-bit L1 id)
// depends on the numbering of the run:
//
//   index  L1 id = k mod 2^24 (daqflow's FED emulator and `fedsend` by default).
//   cms    the trigger's own count: the first event of a run is 1, each next one the previous
//          + 1; after 2^24 - 1 comes 0 (the counter rolls over); a resync restarts the count at
//          1. The event id is (resync count, event number), the count going up at each resync
//          and each rollover so that ids never repeat. Any other number is an error: a duplicate,
//          a first event other than 1, or a skip.
//
// No allocation but in describe(); no exception.

#include <cstdint>
#include <string>

namespace daqflow::apps::fed {

enum class EventNumbering : std::uint8_t { index, cms };

struct EventId {
  std::uint32_t resync = 0;  // resyncs and rollovers before this event
  std::uint32_t number = 0;  // the L1 id: 24 bits

  [[nodiscard]] std::uint64_t packed() const { return std::uint64_t{resync} << 32 | number; }
  friend bool operator==(const EventId&, const EventId&) = default;
};

// One stream's CMS event numbers, in order.
class CmsEventSequence {
 public:
  enum class Step : std::uint8_t {
    next,       // previous + 1
    resync,     // back to 1: a new resync epoch
    rollover,   // 2^24 - 1, then 0: the counter wrapped (a new epoch too)
    not_first,  // error: the first event of the run is not 1
    duplicate,  // error: the same number again
    skipped,    // error: any other number
  };
  [[nodiscard]] static bool is_error(Step s) { return s >= Step::not_first; }

  // Takes the next event's L1 id (24 bits). After an error the sequence goes on from that number.
  Step take(std::uint32_t l1_id);
  // The id of the event last taken.
  [[nodiscard]] EventId current() const { return {resync_, previous_}; }
  // The id an event numbered l1_id would get as the next one, without taking it.
  [[nodiscard]] EventId peek(std::uint32_t l1_id) const;
  // The id the next event should get.
  [[nodiscard]] EventId expected() const { return peek(next_number()); }
  // The number the next event should carry (1 first).
  [[nodiscard]] std::uint32_t next_number() const { return (previous_ + 1) & 0xffffff; }
  // What an error step means, with the numbers: "skipped from event number 41 to 43".
  [[nodiscard]] std::string describe(Step s, std::uint32_t l1_id) const;
  void reset() { *this = CmsEventSequence{}; }

 private:
  std::uint32_t previous_ = 0;
  std::uint32_t resync_ = 0;
  std::uint32_t before_error_ = 0;  // previous_ before the last take (for describe())
  bool started_ = false;
};

// The id of the event a builder numbers `number` (what the EVM assigns, BuiltEvent::number, an
// event file's record): with cms numbering resync count << 32 | L1 id; with index numbering
// k, whose FEDs carry k mod 2^24, each wrap of the 24 bits counted as a resync (from 2^32 events
// on, the count is the high 32 bits instead: the L1 id is right either way).
[[nodiscard]] EventId event_id_of(std::uint64_t number);

// How errors and logs name an event, as the CMS event builder does: by its L1 id, with the
// resync count where it is not 0: "event 121", "event 121 (resync 2)".
[[nodiscard]] std::string event_name(EventId id);
[[nodiscard]] inline std::string event_name(std::uint64_t number) {
  return event_name(event_id_of(number));
}

// The L1 id that the FEDs of event k carry: k mod 2^24 (index), or (cms) the count from 1,
// restarting at 1 after every `resync_every` events (0: never), modulo 2^24.
[[nodiscard]] std::uint32_t l1_id_of(EventNumbering numbering, std::uint64_t event,
                                     std::uint64_t resync_every);

}  // namespace daqflow::apps::fed
