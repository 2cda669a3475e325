#pragma once
// The writer behind `output: {kind: frd}`: built events in CMS's FRD format, in the run
// directory layout the HLT reads (include/daqflow/apps/output/frd.hpp), on a thread of its own.
//
// Per luminosity section (the event's, as the EVM assigned it) files of up to events_per_file
// events, written in open/ and renamed into the run directory when complete, then given their
// .jsn; a section is closed (its EoLS written) once an event of a later section comes, empty
// sections in between included, and the rest at the end of the run, followed by the EoR. An
// event of a section already closed (a block re-assigned after a BU was lost) goes into a new
// file of that section, whose EoLS is written again at the end with the new counts.
//
// Each event: its FRD header (event number = the low 32 bits of the event id: the CMS event
// number, or the index) and its super-fragments gathered with writev() from the received
// buffers; the CRC-32C of the FED data computed once.

#include <sys/uio.h>

#include <array>
#include <atomic>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "daqflow/apps/output/frd.hpp"
#include "threaded_output.hpp"

namespace daqflow::apps::output {

// What becomes of an event without some RU's data (a RU was lost): the HLT expects complete
// events, so by default it never sees one.
enum class IncompleteEvents : std::uint8_t {
  drop,   // not written; counted lost in its section's EoLS and in the BU's events_dropped
  write,  // written like any other (an FRD event has no flag to mark it)
};

struct FrdOutputSettings {
  std::string dir;  // the run directory (…/run000017) is made here
  std::uint32_t run_number = 0;
  std::string bu_id;
  std::uint32_t events_per_file = 400;
  IncompleteEvents incomplete = IncompleteEvents::drop;
  std::size_t queue_depth = 8;
};

class FrdOutput final : public ThreadedOutput {
 public:
  // Makes the run directory, open/, jsd/ and fu.lock (an existing run directory is refused).
  [[nodiscard]] static Result<std::unique_ptr<FrdOutput>> create(FrdOutputSettings settings);
  ~FrdOutput() override;
  FrdOutput(const FrdOutput&) = delete;
  FrdOutput& operator=(const FrdOutput&) = delete;

 private:
  static constexpr std::size_t kMaxIov = IOV_MAX;
  struct Section {
    std::uint64_t events = 0;
    std::uint64_t bytes = 0;
    std::uint32_t files = 0;
    std::uint64_t lost = 0;  // incomplete events dropped
    std::uint32_t next_index = 0;
    bool closed = false;    // its EoLS is written
    bool reopened = false;  // written to after that: its EoLS is written again at the end
  };

  explicit FrdOutput(FrdOutputSettings settings);
  void write_event(std::span<const EventPiece> pieces, const BuiltEvent& event) override;
  void end_batch() override;
  void finish() override;
  bool open_file(std::uint32_t lumi);
  bool finish_file();
  bool flush();
  bool write_eols(std::uint32_t lumi);
  bool write_json(const std::string& name, const std::string& legend_file,
                  const std::vector<std::uint64_t>& values);
  void fail_io(const std::string& what);

  FrdOutputSettings settings_;
  std::string run_dir_;
  std::string open_dir_;
  std::map<std::uint32_t, Section> sections_;
  std::uint32_t highest_lumi_ = 0;
  // The open file.
  int fd_ = -1;
  std::uint32_t file_lumi_ = 0;
  std::uint32_t file_index_ = 0;
  std::uint64_t file_events_ = 0;
  std::uint64_t file_bytes_ = 0;  // header included
  std::uint32_t body_crc_ = 0;    // CRC-32C of the file's bytes after its header
  std::array<iovec, kMaxIov> iov_{};
  std::size_t iov_count_ = 0;
  std::vector<std::array<std::byte, kFrdHeaderSize>> headers_;
  std::size_t header_count_ = 0;
};

}  // namespace daqflow::apps::output
