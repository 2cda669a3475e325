#pragma once
// Where a RU's fragments come from: the FED emulator, or FED streams received over TCP (one
// connection per FED, as CMS FEROLs send them). Either way the RU asks for one event at a time,
// in order, and the source writes that event's super-fragment (all its FEDs' fragments,
// concatenated in FED order) once, directly into the RU's chunk memory.
//
// Threading: produce() is called from the RU's agent thread only. A network source may run I/O
// threads of its own behind it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>

#include "daqflow/core/result.hpp"

namespace daqflow::apps::fed {

// Three words without padding: returned in registers, built there (a padded struct was built on
// the stack and read back whole, a read that waits for every store before it, the fragments'
// copies included).
struct Produced {
  enum class Status : std::uint32_t {
    ready,      // bytes written for the event
    not_ready,  // the data of this event has not arrived (or the trigger rate holds it back)
    no_room,    // out is too small: give a fresh chunk (at least max_super_fragment_size())
    failed,     // a fatal input error; failure() says what
  };
  Status status = Status::not_ready;
  std::uint32_t bytes = 0;
  std::uint32_t flags = 0;  // wire::EventFlags (kEventCorrupted for a bad fragment when marking)
};

struct FragmentSourceStats {
  std::uint64_t events = 0;
  std::uint64_t fragments = 0;
  std::uint64_t bytes = 0;
  std::uint64_t fragment_errors = 0;  // bad fragments seen (network input)
  std::uint64_t crc_checked = 0;
};

class FragmentSource {
 public:
  virtual ~FragmentSource() = default;
  // Writes the super-fragment of `event` (event numbers start at 0 and are asked in order) into
  // out. Never blocks.
  [[nodiscard]] virtual Produced produce(std::uint64_t event, std::span<std::byte> out) = 0;
  [[nodiscard]] virtual std::size_t max_super_fragment_size() const = 0;
  [[nodiscard]] virtual std::size_t fed_count() const = 0;
  [[nodiscard]] virtual FragmentSourceStats stats() const = 0;
  // What failed, naming the FED and the event concerned (by its L1 id, fed::event_name()).
  [[nodiscard]] virtual std::string failure() const = 0;
  // Stops I/O threads (network input). Idempotent.
  virtual void stop() {}
};

}  // namespace daqflow::apps::fed
