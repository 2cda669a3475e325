// The writer behind `output: {kind: hdf5}`: records as the file output writes them (built
// events, an SFC's accepted events, timeslices), in HDF5 files any analyst opens with h5py
// (daqflow/apps/output/hdf5_file.hpp, docs/hdf5.md), on a thread of its own.
//
// Per batch, the events' pieces are gathered into one staging buffer and appended with their
// index rows in one step, flushed before the batch is handed back: what the BU acknowledges is
// on disk for the salvage. Files roll as the file output's do (max_file_mb, max_file_events, a
// new luminosity section), are written as NAME.h5.part and renamed NAME.h5 once closed and
// synced; past max_total_mb nothing more is written (events_over_cap).

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "daqflow/apps/fed/event_numbers.hpp"
#include "daqflow/apps/output/hdf5_file.hpp"
#include "daqflow/core/log.hpp"
#include "daqflow/runtime/params.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "file_output.hpp"
#include "file_util.hpp"
#include "outputs.hpp"
#include "threaded_output.hpp"

namespace daqflow::apps::output {
namespace {

namespace fs = std::filesystem;

class Hdf5Output final : public ThreadedOutput {
 public:
  Hdf5Output(FileOutputSettings settings, Hdf5WriteOptions options)
      : ThreadedOutput(settings.queue_depth),
        settings_(std::move(settings)),
        options_(options),
        sequence_(settings_.first_sequence) {
    start(settings_.events_before, settings_.bytes_before);
  }
  ~Hdf5Output() override {
    const auto closed = close();
    if (!closed) spdlog::error("HDF5 output: {}", closed.error().message());
  }
  Hdf5Output(const Hdf5Output&) = delete;
  Hdf5Output& operator=(const Hdf5Output&) = delete;

 private:
  void write_event(std::span<const EventPiece> pieces, const BuiltEvent& event) override;
  void end_batch() override;
  void finish() override;
  bool append();  // the staged events into the open file
  bool open_file(std::uint32_t lumi);
  bool finish_file();
  void fail(const std::string& what) {
    WriterCounts::add(counts_.write_errors);
    set_failure("HDF5 output: " + what);
  }

  FileOutputSettings settings_;
  Hdf5WriteOptions options_;
  std::unique_ptr<Hdf5Writer> writer_;
  std::string final_path_;
  std::uint32_t sequence_ = 0;
  FileLimits limits_{settings_, "HDF5 output"};
  // The batch's events staged for the open file.
  std::vector<Hdf5Record> records_;
  std::unique_ptr<std::byte[]> staged_;
  std::size_t staged_size_ = 0;
  std::size_t staged_capacity_ = 0;
};

void Hdf5Output::end_batch() {
  (void)append();
}

void Hdf5Output::write_event(std::span<const EventPiece> pieces, const BuiltEvent& event) {
  std::uint64_t size = 0;
  for (const EventPiece& piece : pieces) size += piece.size;
  // HDF5's own bytes (attributes, index) are not counted against the limits: only the data.
  const auto step = limits_.step(event, size, 0, writer_ != nullptr);
  if (step == FileLimits::Step::over_cap) return WriterCounts::add(counts_.events_over_cap);
  if (step == FileLimits::Step::roll_then_write && !finish_file()) return;
  if (!writer_ && !open_file(event.lumi)) return;

  const std::size_t at = staged_size_;
  if (at + size > staged_capacity_) {
    // Grown, never shrunk: after the first batches no batch allocates (nor zeroes what it is
    // about to overwrite, as a vector's resize would).
    staged_capacity_ = std::max(2 * staged_capacity_, at + size);
    auto grown = std::make_unique_for_overwrite<std::byte[]>(staged_capacity_);
    if (at > 0) std::memcpy(grown.get(), staged_.get(), at);
    staged_ = std::move(grown);
  }
  staged_size_ = at + size;
  std::byte* out = staged_.get() + at;
  for (const EventPiece& piece : pieces) {
    std::memcpy(out, piece.data, piece.size);
    out += piece.size;
  }
  Hdf5Record r;
  r.event = event.number;
  r.size = size;
  r.lumi = event.lumi;
  r.flags = event.flags;
  r.pieces = static_cast<std::uint32_t>(pieces.size());
  r.crc32c = wire::crc32c(std::span<const std::byte>(staged_.get() + at, size));
  records_.push_back(r);
  limits_.added(event, size);
}

bool Hdf5Output::append() {
  if (records_.empty()) return true;
  auto r = writer_->append(records_, std::span<const std::byte>(staged_.get(), staged_size_));
  records_.clear();
  staged_size_ = 0;
  if (!r) {
    fail(r.error().message());
    return false;
  }
  return true;
}

bool Hdf5Output::open_file(std::uint32_t lumi) {
  const std::string stem =
      (fs::path(settings_.dir) / data_file_stem(settings_.run_number, settings_.bu_id, sequence_))
          .string();
  final_path_ = stem + std::string(kHdf5Suffix);
  if (const std::string taken = taken_name(final_path_); !taken.empty()) {
    fail(taken);
    return false;
  }
  Hdf5FileInfo info;
  info.content = settings_.content;
  info.run = settings_.run_number;
  info.writer = settings_.bu_id;
  info.sequence = sequence_;
  info.lumi = lumi;
  auto writer = Hdf5Writer::create(final_path_ + std::string(kPartSuffix), info, options_);
  if (!writer) {
    fail(writer.error().message());
    return false;
  }
  writer_ = std::move(*writer);
  limits_.opened(0);
  return true;
}

bool Hdf5Output::finish_file() {
  if (!append()) return false;
  const std::string part = writer_->path();
  const std::uint64_t events = writer_->records();
  const std::uint64_t bytes = writer_->bytes();
  auto closed = writer_->close();
  writer_.reset();
  if (!closed) {
    fail(closed.error().message());
    return false;
  }
  if (::rename(part.c_str(), final_path_.c_str()) != 0) {
    fail(fmt::format("renaming {}: {}", part, std::strerror(errno)));
    return false;
  }
  sync_directory(settings_.dir);
  // The HDF5 library wrote the file: its checksum is that of the bytes read back (from the page
  // cache, just written).
  std::uint32_t crc = 0;
  std::string error;
  if (!file_crc32c(final_path_, crc, error)) {
    fail(error);
    return false;
  }
  finished_file(final_path_, events, crc);
  WriterCounts::add(counts_.events_written, events);
  WriterCounts::add(counts_.bytes_written, bytes);
  WriterCounts::add(counts_.files_closed);
  ++sequence_;
  return true;
}

void Hdf5Output::finish() {
  if (writer_ && !failed_) (void)finish_file();
  writer_.reset();
}

}  // namespace

Result<std::pair<std::uint64_t, std::uint64_t>> hdf5_file_counts(const std::string& path) {
  auto reader = Hdf5Reader::open(path);
  if (!reader) return reader.error();
  return std::pair<std::uint64_t, std::uint64_t>{(*reader)->index().size(), (*reader)->data_size()};
}

Result<std::unique_ptr<EventOutput>> make_hdf5_output(const nlohmann::json& params,
                                                      const OutputContext& context) {
  const FileFormat format{"hdf5",
                          {"kind", "dir", "max_file_mb", "max_file_events", "max_total_mb",
                           "compression", "compression_level"},
                          kHdf5Suffix,
                          hdf5_file_counts};
  auto s = read_file_output_settings(params, context, format);
  if (!s) return s.error();
  Hdf5WriteOptions options;
  const std::string compression = params.value("compression", std::string("none"));
  if (compression == "gzip") {
    options.compression = Hdf5Compression::gzip;
  } else if (compression != "none") {
    return Error("output: compression '" + compression + "' is neither none nor gzip");
  }
  const auto level = params.value("compression_level", 1);
  if (level < 1 || level > 9) {
    return Error(fmt::format("output: compression_level {} is outside 1..9", level));
  }
  options.gzip_level = level;
  return std::unique_ptr<EventOutput>(std::make_unique<Hdf5Output>(std::move(*s), options));
}

}  // namespace daqflow::apps::output
