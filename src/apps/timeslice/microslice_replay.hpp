#pragma once
// Recorded microslices for a ts_input (`replay`, docs/timeslices.md): one input channel read back
// from the timeslice archives ts_builders wrote. Every archive file under the path is verified
// first (as `daqflow dump` does: record CRCs, every component, every microslice CRC-32C); the
// channel is the component of one eq_id, and each recorded timeslice gives one interval: its
// core microslices, descriptors and contents as recorded. Timeslices are replayed in the order
// of their index, renumbered from 0 (a replay of timeslices 40..59 makes timeslices 0..19);
// the descriptors' start times and stream offsets are those of the replay, everything else
// (sizes, flags, CRCs, subsystem, contents) is the recording's.
//
// Threading: opened at Configure; read() on the agent thread (pread on files opened at open(),
// no allocation).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "apps/output/timeslice_check.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::apps::timeslice {

class MicrosliceReplay {
 public:
  MicrosliceReplay() = default;
  MicrosliceReplay(const MicrosliceReplay&) = delete;
  MicrosliceReplay& operator=(const MicrosliceReplay&) = delete;
  MicrosliceReplay(MicrosliceReplay&& other) noexcept;
  MicrosliceReplay& operator=(MicrosliceReplay&& other) noexcept;
  ~MicrosliceReplay();

  // Indexes the component eq_id of every timeslice archive at path (a .dqf file or a folder of
  // them). Errors name the file and the timeslice: a file that does not verify or holds no
  // timeslices, a geometry other than `geometry`, a timeslice without this eq_id.
  [[nodiscard]] static Result<MicrosliceReplay> open(const std::string& path, std::uint16_t eq_id,
                                                     const Geometry& geometry);

  [[nodiscard]] std::size_t intervals() const { return entries_.size(); }
  // The largest core (descriptors and contents) of any interval: the size of a send buffer.
  [[nodiscard]] std::uint64_t largest_interval_bytes() const { return largest_interval_; }
  // The largest microslice content, bytes.
  [[nodiscard]] std::uint32_t largest_microslice() const { return largest_microslice_; }

  // Reads interval i into out: its core descriptors as recorded (start times and offsets to be
  // set by the caller), then their contents; content_bytes receives their size. False when the
  // read failed (out too small, a short read: the file changed since open()).
  [[nodiscard]] bool read(std::size_t i, std::span<std::byte> out,
                          std::uint64_t& content_bytes) const;

 private:
  struct Entry {
    std::uint64_t index = 0;           // recorded timeslice index
    int file = -1;                     // in fds_
    std::uint64_t descriptors_at = 0;  // file offset of its core's microslice descriptors
    std::uint64_t contents_at = 0;     // file offset of its core's contents
    std::uint64_t content_bytes = 0;   // of the core
  };
  void close_files();

  std::uint32_t core_ = 0;
  std::vector<int> fds_;
  std::vector<Entry> entries_;
  std::uint64_t largest_interval_ = 0;
  std::uint32_t largest_microslice_ = 0;
};

}  // namespace daqflow::apps::timeslice
