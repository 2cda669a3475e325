#pragma once
// Reading a data file in place: a BU's or an SFC's .dqf file, a time-slice builder's archive
// (.dqf of timeslices) or a CMS FRD .raw file, mapped read-only and indexed record by record.
// Records and their pieces (FED fragments, timeslice components) are spans of the mapping, never
// copies: what the Python package hands out as numpy arrays. verify() makes every check
// `daqflow dump` makes (the same checkers, event_file.hpp and frd.hpp).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "daqflow/apps/output/convert.hpp"
#include "daqflow/apps/output/event_file.hpp"
#include "daqflow/apps/output/hdf5_file.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::apps::output {

// A piece of a record's data: one FED fragment (header to trailer) of a built event, or one
// component of a timeslice (its microslice descriptors and their contents); offsets are in the
// file.
struct Piece {
  std::uint32_t source = 0;  // FED source id, or the component's equipment id
  std::uint64_t offset = 0;  // the fragment; a component's contents
  std::uint64_t size = 0;
  std::uint64_t descriptors = 0;  // a component's microslice descriptors (32 B each)
  std::uint32_t microslices = 0;  // 0 for a FED fragment
};

class DataFileReader {
 public:
  // Maps the file and indexes its records (headers only: no CRC computed). A .dqf file without
  // its sidecar (still being written, or its writer died) is read up to its last whole record.
  // Errors name the file and what is wrong with its structure.
  [[nodiscard]] static Result<DataFileReader> open(const std::string& path);

  DataFileReader(DataFileReader&& other) noexcept;
  DataFileReader& operator=(DataFileReader&& other) noexcept;
  DataFileReader(const DataFileReader&) = delete;
  DataFileReader& operator=(const DataFileReader&) = delete;
  ~DataFileReader();

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] DataFormat format() const { return format_; }  // dqf or frd
  // Content, run, writer (the BU's id; FRD: the .jsn's source), sequence (FRD: the file's index)
  // and luminosity section (.dqf: the sidecar's; 0 when not recorded).
  [[nodiscard]] const Hdf5FileInfo& info() const { return info_; }
  [[nodiscard]] bool complete() const { return complete_; }    // sidecar (.json / .jsn) present
  [[nodiscard]] bool truncated() const { return truncated_; }  // ends within a record

  // The whole mapping (empty for an empty file).
  [[nodiscard]] std::span<const std::byte> bytes() const { return {data_, size_}; }
  // One row per record, as an HDF5 file's index has them: event, offset (of the record's data
  // in the file), size, luminosity section, flags, pieces (FRD: 1), CRC-32C of the data.
  [[nodiscard]] const std::vector<Hdf5Record>& records() const { return records_; }
  [[nodiscard]] std::span<const std::byte> data(const Hdf5Record& record) const {
    return bytes().subspan(record.offset, record.size);
  }

  // Maps every page of the file now, in one system call (Linux 5.14 and later; a no-op before):
  // cheaper than a page fault at each first touch when the whole file is to be read.
  void prefault() const;

  // Record i's pieces: a built event's FED fragments in order of appearance (walked from the end,
  // structure only), a timeslice's components; a farm decision's record has none. An error when
  // the record cannot be split (a damaged record: verify() says where).
  [[nodiscard]] Result<std::vector<Piece>> pieces(std::size_t i) const;

  // Every check `daqflow dump` makes on this file: each record's CRC-32C, its FED fragments
  // (CRC-16, L1 ids) or timeslice components (every microslice's CRC-32C), the sidecar's counts
  // and checksum. on_event is called for each record.
  [[nodiscard]] FileReport verify(
      const std::function<void(const EventSummary&)>& on_event = {}) const;

 private:
  DataFileReader() = default;
  [[nodiscard]] Result<void> index_dqf();
  [[nodiscard]] Result<void> index_frd();

  std::string path_;
  DataFormat format_ = DataFormat::dqf;
  Hdf5FileInfo info_;
  bool complete_ = false;
  bool truncated_ = false;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::vector<Hdf5Record> records_;
};

}  // namespace daqflow::apps::output
