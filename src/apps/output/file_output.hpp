#pragma once
// The disk writer behind `output: {kind: file}`: a thread of its own writes the BU's built events
// into files of the format of daqflow/apps/output/event_file.hpp, so that the BU never waits for
// the disk.
//
// Data path: submit() pushes the batch into a bounded SPSC ring; the writer thread takes it,
// writes every event as a record header followed by the event's pieces with writev() (the
// pieces are gathered straight from the received buffers: no copy of event data), and returns
// the batch through a second SPSC ring that poll_done() reads. One writev() covers up to
// IOV_MAX pieces; nothing allocates per event (the iovec array and the record headers are
// reserved at construction). Each event's CRC32C is computed once; the file's checksum is
// combined from them. fsync() runs when a file is closed, not per batch.
//
// Files roll when the next event would pass max_file_mb, when max_file_events are in the file,
// or when the event's luminosity section is not the file's (a file holds one section); a file is
// written as NAME.dqf.part, renamed to NAME.dqf and then given its sidecar NAME.json. Once
// max_total_mb would be passed no further event is written (events_over_cap, one warning), but
// batches still complete so that the run goes on.
//
// Threading: as ThreadedOutput's; stats() from any thread.

#include <sys/uio.h>

#include <array>
#include <atomic>
#include <climits>
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "daqflow/apps/output/event_file.hpp"
#include "daqflow/apps/output/output.hpp"
#include "threaded_output.hpp"

namespace daqflow::apps::output {

struct FileOutputSettings {
  std::string dir;
  std::uint64_t max_file_bytes = 0;   // 0: no limit
  std::uint64_t max_file_events = 0;  // 0: no limit
  std::uint64_t max_total_bytes = 0;  // 0: no limit
  std::uint32_t run_number = 0;
  std::string bu_id;
  std::size_t queue_depth = 8;
  FileContent content = FileContent::built_events;
  std::uint32_t first_sequence = 0;  // the first file's sequence number
  // Started again in its run: what its earlier processes' finished files hold (their sidecars),
  // counted in events_written and bytes_written from the start.
  std::uint64_t events_before = 0;
  std::uint64_t bytes_before = 0;
};

// The limits of FileOutputSettings as the file-writing kinds (file, hdf5) apply them, with the
// sizes they count: a file rolls before an event of another luminosity section, past
// max_file_events, or when the event would take it past max_file_bytes; past max_total_bytes
// nothing more is written (one warning naming the first event left out).
class FileLimits {
 public:
  FileLimits(const FileOutputSettings& settings, std::string_view writer)
      : settings_(settings), writer_(writer) {}

  enum class Step : std::uint8_t { write, roll_then_write, over_cap };
  // Where an event of `bytes` goes; a new file adds `header` bytes before it; open: whether a
  // file is open. over_cap from the first event past the cap on.
  [[nodiscard]] Step step(const BuiltEvent& event, std::uint64_t bytes, std::uint64_t header,
                          bool open);
  void opened(std::uint64_t header);  // a new file, of `header` bytes so far
  void added(const BuiltEvent& event, std::uint64_t bytes);

  [[nodiscard]] std::uint64_t file_events() const { return file_events_; }
  [[nodiscard]] std::uint64_t file_bytes() const { return file_bytes_; }
  [[nodiscard]] std::uint32_t file_lumi() const { return file_lumi_; }

 private:
  const FileOutputSettings& settings_;
  std::string_view writer_;  // "file output", "HDF5 output": for the warning
  std::uint64_t file_events_ = 0;
  std::uint64_t file_bytes_ = 0;
  std::uint32_t file_lumi_ = 0;
  std::uint64_t total_bytes_ = 0;  // all files, the open one included
  bool over_cap_ = false;
};

// What the file-writing kinds (file, hdf5) differ in when their settings are read: the keys
// they take, and how an earlier process's finished file of the run is counted.
struct FileFormat {
  std::string_view kind;
  std::vector<const char*> keys;
  std::string_view finished_suffix;  // names its finished files (their sidecars, for file)
  // A finished file's events and bytes.
  std::function<Result<std::pair<std::uint64_t, std::uint64_t>>(const std::string&)>
      finished_counts;
};

// The settings of `output: {kind: file|hdf5, dir, max_file_mb, max_file_events, max_total_mb}`:
// the keys checked (unknown ones refused), the directory made and checked writable, and
// files of this run and BU from an earlier attempt refused (unless the BU was started again in
// its run: then the sequence goes on after them and their events count as written).
[[nodiscard]] Result<FileOutputSettings> read_file_output_settings(const nlohmann::json& params,
                                                                   const OutputContext& context,
                                                                   const FileFormat& format);

class FileOutput final : public ThreadedOutput {
 public:
  // Starts the writer thread. The directory must exist (make_file_output creates it).
  explicit FileOutput(FileOutputSettings settings);
  ~FileOutput() override;
  FileOutput(const FileOutput&) = delete;
  FileOutput& operator=(const FileOutput&) = delete;

 private:
  static constexpr std::size_t kMaxIov = IOV_MAX;

  // Writer thread.
  void write_event(std::span<const EventPiece> pieces, const BuiltEvent& event) override;
  void end_batch() override;
  void finish() override;
  bool ensure_iov_room(std::size_t entries);
  bool flush();
  bool open_file();
  // The room kept for finishing files on a full disk (kReserveSuffix).
  bool reserve_room();
  void release_room();
  bool finish_file();
  bool write_sidecar();

  FileOutputSettings settings_;

  // Writer thread state.
  std::array<iovec, kMaxIov> iov_{};
  std::size_t iov_count_ = 0;
  std::vector<std::array<std::byte, kRecordHeaderSize>> record_headers_;  // kMaxIov of them
  std::size_t record_count_ = 0;
  std::array<std::byte, kMaxFileHeaderSize> file_header_{};
  int fd_ = -1;
  std::uint32_t sequence_ = 0;
  std::string reserve_path_;  // empty: no room reserved
  std::string stem_;          // path without suffix of the open file
  FileLimits limits_{settings_, "file output"};
  std::uint32_t file_crc_ = 0;
  std::uint64_t first_event_ = 0;
  std::uint64_t last_event_ = 0;
};

}  // namespace daqflow::apps::output
