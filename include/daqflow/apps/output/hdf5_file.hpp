#pragma once
// daqflow's HDF5 event files (`output: {kind: hdf5}`, docs/hdf5.md): the records a writer wrote
// (built events, an SFC's accepted events or timeslices: the same record contents as a .dqf
// file's), readable with any HDF5 reader (h5py and numpy alone):
//
//   /data    uint8[n], chunked: every record's bytes, back to back
//   /index   compound[m], chunked: per record its id (event), luminosity section, flags,
//            pieces, CRC-32C and where its bytes lie in /data (offset, size)
//   /        attributes: format ("daqflow events"), format_version, content, run, writer,
//            sequence, luminosity_section, compression; once complete also events and, for
//            built events, source_ids (the FEDs found in its events, sorted)
//
// A file is written as NAME.h5.part in SWMR mode (HDF5's single-writer, multiple-reader
// protocol: the file on disk is readable at any time) and flushed after every batch, data before
// index; complete, it is closed, synced and renamed NAME.h5. The file of a writer that died is
// read up to its last flush (salvage_bu_files()).
//
// Control path (the writer's thread, the salvage, `daqflow dump`, `daqflow convert`); errors
// carry HDF5's own message.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/apps/output/event_file.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/wire/fed.hpp"

namespace daqflow::apps::output {

inline constexpr std::string_view kHdf5Suffix = ".h5";
inline constexpr std::string_view kHdf5Format = "daqflow events";
inline constexpr std::uint32_t kHdf5FormatVersion = 1;

// One row of /index.
struct Hdf5Record {
  std::uint64_t event = 0;   // the event's id (BuiltEvent::number), or the timeslice's index
  std::uint64_t offset = 0;  // of its bytes in /data
  std::uint64_t size = 0;    // bytes
  std::uint32_t lumi = 0;    // luminosity section (0: none)
  std::uint32_t flags = 0;   // wire::EventFlags
  std::uint32_t pieces = 0;  // super-fragments (built events) or components
  std::uint32_t crc32c = 0;  // of its bytes
  friend bool operator==(const Hdf5Record&, const Hdf5Record&) = default;
};

// The root group's attributes.
struct Hdf5FileInfo {
  FileContent content = FileContent::built_events;
  std::uint32_t run = 0;
  std::string writer;  // the BU (or SFC, time-slice builder) that wrote it
  std::uint32_t sequence = 0;
  std::uint32_t lumi = 0;  // the luminosity section of its events (0: none)
};

enum class Hdf5Compression : std::uint8_t { none, gzip };

struct Hdf5WriteOptions {
  Hdf5Compression compression = Hdf5Compression::none;
  int gzip_level = 1;
  std::size_t data_chunk_bytes = std::size_t{1} << 20;
  std::size_t index_chunk_rows = 4096;
};

class Hdf5Writer {
 public:
  // Creates the file (refused when it exists), its attributes and datasets, and starts SWMR.
  [[nodiscard]] static Result<std::unique_ptr<Hdf5Writer>> create(const std::string& path,
                                                                  const Hdf5FileInfo& info,
                                                                  const Hdf5WriteOptions& options);
  ~Hdf5Writer();
  Hdf5Writer(const Hdf5Writer&) = delete;
  Hdf5Writer& operator=(const Hdf5Writer&) = delete;

  // Appends records whose bytes lie back to back in data (their offsets are set here), then
  // flushes, data before index: a reader (or the salvage) sees all of them or none.
  [[nodiscard]] Result<void> append(std::span<Hdf5Record> records, std::span<const std::byte> data);
  // Closes the file, adds the attributes known only at its end (events, source_ids) and syncs
  // it to disk; nothing is appended after.
  [[nodiscard]] Result<void> close();

  [[nodiscard]] std::uint64_t records() const { return records_; }
  [[nodiscard]] std::uint64_t bytes() const { return bytes_; }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  struct Handles;
  Hdf5Writer(std::string path, std::unique_ptr<Handles> handles);
  std::string path_;
  std::unique_ptr<Handles> h_;
  std::uint64_t records_ = 0;
  std::uint64_t bytes_ = 0;
  bool built_events_ = false;
  std::vector<bool> sources_ = std::vector<bool>(4096);  // FED ids seen (built events)
  std::vector<wire::FedFragmentInfo> infos_;             // scratch of the FED walk
};

class Hdf5Reader {
 public:
  // Opens a file read-only; a writer's file still open (or whose writer died) is read as of its
  // last flush.
  [[nodiscard]] static Result<std::unique_ptr<Hdf5Reader>> open(const std::string& path);
  ~Hdf5Reader();
  Hdf5Reader(const Hdf5Reader&) = delete;
  Hdf5Reader& operator=(const Hdf5Reader&) = delete;

  [[nodiscard]] const Hdf5FileInfo& info() const { return info_; }
  [[nodiscard]] const std::vector<Hdf5Record>& index() const { return index_; }
  [[nodiscard]] std::uint64_t data_size() const { return data_size_; }
  // Reads bytes [offset, offset + out.size()) of /data.
  [[nodiscard]] Result<void> read(std::uint64_t offset, std::span<std::byte> out) const;

 private:
  struct Handles;
  explicit Hdf5Reader(std::unique_ptr<Handles> handles);
  std::unique_ptr<Handles> h_;
  Hdf5FileInfo info_;
  std::vector<Hdf5Record> index_;
  std::uint64_t data_size_ = 0;
};

// Verifies an HDF5 event file as check_event_file() does a .dqf file: its attributes, every
// record's CRC-32C and contents (FED fragments, decisions or timeslices), the index's offsets
// back to back. complete: named NAME.h5 (not .part).
[[nodiscard]] FileReport check_hdf5_file(
    const std::string& path, const std::function<void(const EventSummary&)>& on_event = {});

}  // namespace daqflow::apps::output
