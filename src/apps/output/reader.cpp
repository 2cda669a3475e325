// DataFileReader: a data file mapped read-only and indexed
// (include/daqflow/apps/output/reader.hpp).

#include "daqflow/apps/output/reader.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "daqflow/apps/output/frd.hpp"
#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/fed.hpp"
#include "daqflow/wire/timeslice.hpp"

namespace daqflow::apps::output {

namespace {

namespace fs = std::filesystem;

Error structure_error(const std::string& path, std::uint64_t at, std::string_view what) {
  return Error(ErrorCode::invalid_argument, fmt::format("{}: byte {}: {}", path, at, what));
}

}  // namespace

Result<DataFileReader> DataFileReader::open(const std::string& path) {
  DataFileReader reader;
  reader.path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Error(code_of_errno(errno), fmt::format("{}: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string why = S_ISREG(st.st_mode) ? std::strerror(errno) : "not a regular file";
    ::close(fd);
    return Error(ErrorCode::invalid_argument, fmt::format("{}: {}", path, why));
  }
  reader.size_ = static_cast<std::size_t>(st.st_size);
  if (reader.size_ > 0) {
    void* mem = ::mmap(nullptr, reader.size_, PROT_READ, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return Error(code_of_errno(err), fmt::format("{}: mapping it: {}", path, std::strerror(err)));
    }
    reader.data_ = static_cast<const std::byte*>(mem);
  }
  ::close(fd);
  const bool frd = path.ends_with(".raw");
  reader.format_ = frd ? DataFormat::frd : DataFormat::dqf;
  if (auto r = frd ? reader.index_frd() : reader.index_dqf(); !r) return r.error();
  return reader;
}

DataFileReader::DataFileReader(DataFileReader&& other) noexcept
    : path_(std::move(other.path_)),
      format_(other.format_),
      info_(std::move(other.info_)),
      complete_(other.complete_),
      truncated_(other.truncated_),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      records_(std::move(other.records_)) {}

DataFileReader& DataFileReader::operator=(DataFileReader&& other) noexcept {
  if (this != &other) {
    DataFileReader moved(std::move(other));
    std::swap(path_, moved.path_);
    std::swap(format_, moved.format_);
    std::swap(info_, moved.info_);
    std::swap(complete_, moved.complete_);
    std::swap(truncated_, moved.truncated_);
    std::swap(data_, moved.data_);
    std::swap(size_, moved.size_);
    std::swap(records_, moved.records_);
  }
  return *this;
}

DataFileReader::~DataFileReader() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

Result<void> DataFileReader::index_dqf() {
  const std::span<const std::byte> file = bytes();
  FileHeader header;
  std::size_t at = 0;
  if (const auto s = decode_file_header(file, header, at); s != FileFormatStatus::ok) {
    return structure_error(path_, 0, fmt::format("file header: {}", to_string(s)));
  }
  info_.content = header.content;
  info_.run = header.run_number;
  info_.sequence = header.sequence;
  info_.writer = std::string(header.bu_id);
  if (path_.ends_with(kDataSuffix)) {
    const std::string sidecar = fs::path(path_).replace_extension(kSidecarSuffix).string();
    std::error_code ec;
    complete_ = fs::exists(sidecar, ec);
    if (complete_) {
      auto s = read_sidecar(sidecar);
      if (!s) return s.error().context(sidecar);
      info_.lumi = s->lumi;
    }
  }
  while (at < file.size()) {
    RecordHeader r;
    const bool whole_header = file.size() - at >= kRecordHeaderSize;
    if (whole_header && decode_record_header(file.subspan(at), r) != FileFormatStatus::ok) {
      return structure_error(path_, at, "bad record magic number");
    }
    if (!whole_header || r.size > file.size() - at - kRecordHeaderSize) {
      // A file still being written ends anywhere; a complete one may not.
      if (!complete_) {
        truncated_ = true;
        break;
      }
      return structure_error(
          path_, at, whole_header ? "record runs past the file's end" : "truncated record header");
    }
    records_.push_back(
        {r.event, at + kRecordHeaderSize, r.size, info_.lumi, r.flags, r.pieces, r.crc32c});
    at += kRecordHeaderSize + r.size;
  }
  return ok();
}

Result<void> DataFileReader::index_frd() {
  const auto name = parse_frd_data_name(fs::path(path_).filename().string());
  if (!name) {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("{}: not named runNNNNNN_lsNNNN_indexNNNNNN.raw", path_));
  }
  info_.run = name->run;
  info_.sequence = name->index;
  std::error_code ec;
  complete_ = fs::exists(fs::path(path_).replace_extension(".jsn"), ec);
  const std::span<const std::byte> file = bytes();
  RawFileHeader header;
  if (const FrdStatus s = decode_raw_file_header(file, header); s != FrdStatus::ok) {
    return structure_error(path_, 0, fmt::format("file header: {}", to_string(s)));
  }
  info_.lumi = header.lumi;
  std::size_t at = kRawFileHeaderSize;
  while (at < file.size()) {
    FrdHeader h;
    const FrdStatus s = decode_frd_header(file.subspan(at), h);
    if (s != FrdStatus::ok || h.size > file.size() - at - kFrdHeaderSize) {
      return structure_error(path_, at,
                             s != FrdStatus::ok ? to_string(s) : "event runs past the file's end");
    }
    info_.run = h.run;
    records_.push_back({h.event, at + kFrdHeaderSize, h.size, h.lumi, 0, 1, h.crc32c});
    at += kFrdHeaderSize + h.size;
  }
  return ok();
}

namespace {

Result<std::vector<Piece>> fed_pieces(const std::string& path, const Hdf5Record& record,
                                      std::span<const std::byte> data) {
  std::vector<wire::FedFragmentInfo> infos(data.size() / wire::kFedMinFragmentSize + 1);
  wire::FedCheck structure_only;
  structure_only.verify_crc = false;
  structure_only.allow_reserved_bits = true;
  structure_only.allow_receiver_errors = true;
  const wire::FedWalk walk = wire::walk_super_fragment(data, infos, structure_only);
  if (walk.status != wire::FedStatus::ok) {
    return structure_error(
        path, record.offset + walk.error_offset,
        fmt::format("event {}: FED fragments: {}", record.event, wire::to_string(walk.status)));
  }
  std::vector<Piece> pieces;
  pieces.reserve(walk.count);
  for (std::size_t i = 0; i < walk.count; ++i) {
    pieces.push_back({infos[i].source_id, record.offset + infos[i].offset, infos[i].size, 0, 0});
  }
  return pieces;
}

Result<std::vector<Piece>> timeslice_pieces(const std::string& path, const Hdf5Record& record,
                                            std::span<const std::byte> data) {
  wire::TimesliceDescriptor d;
  if (data.size() < wire::kTimesliceDescriptorSize ||
      wire::decode(data.first<wire::kTimesliceDescriptorSize>(), d) != wire::PayloadStatus::ok) {
    return structure_error(path, record.offset,
                           fmt::format("timeslice {}: bad timeslice descriptor", record.event));
  }
  std::vector<Piece> pieces;
  pieces.reserve(d.components_present);
  std::uint64_t at = wire::kTimesliceDescriptorSize;
  for (std::uint16_t c = 0; c < d.components_present; ++c) {
    if (data.size() - at < wire::kContributionSize) {
      return structure_error(path, record.offset + at,
                             fmt::format("timeslice {}: component {} truncated", record.event, c));
    }
    const std::byte* p = data.data() + at;
    const std::uint32_t microslices = wire::load_le32(p + 20);
    const std::uint64_t content = wire::load_le64(p + 32);
    const std::uint64_t descriptors = std::uint64_t{microslices} * wire::kMicrosliceDescriptorSize;
    const std::uint64_t left = data.size() - at - wire::kContributionSize;
    if (microslices > wire::kMaxMicroslicesPerContribution || descriptors > left ||
        content > left - descriptors) {
      return structure_error(
          path, record.offset + at,
          fmt::format("timeslice {}: component {} runs past the record", record.event, c));
    }
    const std::uint64_t first = record.offset + at + wire::kContributionSize;
    pieces.push_back({wire::load_le16(p + 16), first + descriptors, content, first, microslices});
    at += wire::kContributionSize + descriptors + content;
  }
  return pieces;
}

}  // namespace

Result<std::vector<Piece>> DataFileReader::pieces(std::size_t i) const {
  const Hdf5Record& record = records_.at(i);
  switch (info_.content) {
    case FileContent::built_events:
      return fed_pieces(path_, record, data(record));
    case FileContent::timeslices:
      return timeslice_pieces(path_, record, data(record));
    case FileContent::farm_decisions:
      break;
  }
  return std::vector<Piece>{};
}

void DataFileReader::prefault() const {
#ifdef MADV_POPULATE_READ
  if (data_ != nullptr) {
    (void)::madvise(const_cast<std::byte*>(data_), size_, MADV_POPULATE_READ);
  }
#endif
}

FileReport DataFileReader::verify(const std::function<void(const EventSummary&)>& on_event) const {
  return format_ == DataFormat::frd ? check_frd_file(path_, on_event)
                                    : check_event_file(path_, on_event);
}

}  // namespace daqflow::apps::output
