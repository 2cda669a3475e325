#pragma once
// Where a BU's built events go: a disk writer (files of events with a JSON sidecar each) or a
// discard output for benchmarks. The BU hands over one built block at a time as an OutputBatch
// and acknowledges the block once the output gives the batch back.
//
// Threading: submit() and poll_done() are called from the BU's agent thread only; the file
// writer does its I/O on a thread of its own, so the BU never waits for the disk. Batches are
// owned by the BU (a fixed set allocated at Configure) and lent to the output between submit()
// and poll_done(); nothing is allocated per event.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "daqflow/apps/output/event_file.hpp"
#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/params.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::runtime {
struct ClusterConfig;
}

namespace daqflow::apps::output {

// One contiguous piece of an event: a super-fragment (or part of one) in a received buffer.
struct EventPiece {
  const std::byte* data = nullptr;
  std::uint32_t size = 0;
};

struct BuiltEvent {
  // The event's id: its index in the run (event_numbers: index), or (cms) resync count << 32 |
  // event number (apps/fed/event_numbers.hpp).
  std::uint64_t number = 0;
  std::uint32_t flags = 0;        // wire::EventFlags
  std::uint32_t first_piece = 0;  // index into OutputBatch::pieces
  std::uint32_t piece_count = 0;
  std::uint64_t size = 0;  // bytes, all pieces
  std::uint32_t lumi = 0;  // luminosity section, from 1
};

// A built block: its events, the pieces they reference, and the buffers holding those pieces
// (kept alive until the output is done). Vectors are reserved once and reused: clear() keeps
// their capacity.
struct OutputBatch {
  std::uint64_t block_id = 0;
  std::vector<BuiltEvent> events;
  std::vector<EventPiece> pieces;
  std::vector<core::Buffer> buffers;

  void clear() {
    events.clear();
    pieces.clear();
    buffers.clear();
  }
};

struct OutputStats {
  std::uint64_t events_written = 0;  // events in files whose sidecar is written (or discarded)
  std::uint64_t bytes_written = 0;
  std::uint64_t files_closed = 0;
  std::uint64_t events_over_cap = 0;  // not written because the disk cap was reached
  std::uint64_t events_dropped = 0;   // frd: incomplete events not written (incomplete: drop)
  std::uint64_t write_errors = 0;
  std::uint32_t queued = 0;         // batches submitted, not yet done
  std::uint64_t events_copied = 0;  // farm: events in more pieces than a message carries
};

// A file an output finished: renamed to its final name, its events on disk.
struct WrittenFile {
  std::string path;  // absolute, on the host the output runs on
  std::uint64_t bytes = 0;
  std::uint64_t events = 0;
  std::string checksum;  // of every byte of the file: "crc32c:89abcdef"
};

class EventOutput {
 public:
  virtual ~EventOutput() = default;
  // Takes a batch; false when the output's queue is full (try again later).
  [[nodiscard]] virtual bool submit(OutputBatch* batch) = 0;
  // A finished batch (oldest first) or nullptr.
  [[nodiscard]] virtual OutputBatch* poll_done() = 0;
  // Finishes what is queued, closes the current file and writes its sidecar.
  virtual Result<void> close() = 0;
  [[nodiscard]] virtual OutputStats stats() const = 0;
  // The files finished so far, in order (none for outputs that write no files). Any thread.
  [[nodiscard]] virtual std::vector<WrittenFile> files() const { return {}; }
  // Set when the output failed (e.g. disk error); the BU fails with this reason.
  [[nodiscard]] virtual std::string failure() const = 0;
  // failure() is not empty; cheap, for the agent's data path. A batch that comes back from a
  // failed output may not be written: it is not acknowledged (docs/reliability.md).
  [[nodiscard]] virtual bool failed() const = 0;

  // Outputs that send over the network (kind farm) do so on the BU's agent thread, through its
  // endpoint: progress() gives them a turn in every one of the BU's, and on_message() offers them
  // each completion first (true: it was theirs, the BU ignores it).
  virtual int progress() { return 0; }
  [[nodiscard]] virtual bool on_message(const transport::Completion& /*c*/) { return false; }
};

// The files an application's outputs finished in the run, kept past release() (when the outputs
// are closed and gone) for its results: [{path, bytes, events, checksum}, ...]. Any thread.
class FilesWritten {
 public:
  void add(const EventOutput& output);  // as the output closes
  void clear();                         // at Configure
  [[nodiscard]] nlohmann::json to_json() const;

 private:
  mutable std::mutex mutex_;
  std::vector<WrittenFile> files_;
};

struct OutputContext {
  std::uint32_t run_number = 0;
  std::string bu_id;        // names the files: run<run>_<bu>_<seq>.dqf
  std::string default_dir;  // run.output of the configuration
  std::size_t queue_depth = 8;
  FileContent content = FileContent::built_events;
  // Kind farm: the BU's endpoint, the SFC it hands events to, and how many it may send ahead.
  transport::Endpoint* endpoint = nullptr;
  transport::AppIndex sfc = 0;
  std::uint32_t sfc_window = 0;
  // Kind farm: the largest event, when an event may come in more pieces than a message carries
  // (a timeslice of many inputs): such an event is copied into one buffer of this size. 0: no
  // event ever has that many pieces (one that does fails the output, naming it).
  std::uint64_t max_event_size = 0;
  // The BU was started again in the same run (AppContext::restarted()): file outputs go on after
  // the files its earlier instance left instead of refusing them.
  bool restarted = false;
};

// Kind farm: checks that the `output` parameter's sfc is an SFC application and fills in the
// context's endpoint, SFC and window from it (the BU's and the time-slice builder's). Nothing to
// do for another kind.
[[nodiscard]] Result<void> farm_output_context(const runtime::ClusterConfig& cluster,
                                               const nlohmann::json& params,
                                               transport::Endpoint* endpoint,
                                               OutputContext& context);

// Creates the output described by a BU's `output` parameter:
//   {kind: discard}, {kind: file, dir: PATH, max_file_mb: N, max_file_events: N, max_total_mb: N}
//   or {kind: farm, sfc: ID} (the OutputContext then names the endpoint and the SFC)
// The fields of `{kind: file}` (dir, max_file_mb, max_file_events, max_total_mb), for the
// `output` parameter of every application that writes event files (bu, sfc).
[[nodiscard]] std::vector<runtime::ParamSpec> file_output_param_fields();
// An `output` parameter that is {kind: discard} (the default) or {kind: file, ...}: the SFC's.
// what says what goes there.
[[nodiscard]] runtime::ParamSpec discard_or_file_output_spec(const std::string& what);
// The same or {kind: farm, sfc: ID}: the BU's and the time-slice builder's.
[[nodiscard]] runtime::ParamSpec output_spec_with_farm(const std::string& what);

// Whether an output's `kind` keeps what it writes in files (file, hdf5, frd): a block granted to
// a BU with such an output is never given to another, and the files of one that died are
// salvaged (the others lose nothing on disk).
[[nodiscard]] bool keeps_files(const nlohmann::json& output);

// The disk an output writing files may fill (HostNeeds::disks): its folder (dir, else run.output)
// and max_total_mb, else one file of max_file_mb; none for the other kinds.
[[nodiscard]] std::vector<runtime::HostNeeds::Disk> disk_needs(
    const nlohmann::json& output, const runtime::ClusterConfig& cluster);
// The host needs of an application whose only large need is its `output` parameter's disk.
[[nodiscard]] runtime::HostNeeds output_host_needs(const runtime::ApplicationConfig& app,
                                                   const runtime::ClusterConfig& cluster);

[[nodiscard]] Result<std::unique_ptr<EventOutput>> make_output(const nlohmann::json& params,
                                                               const OutputContext& context);

}  // namespace daqflow::apps::output
