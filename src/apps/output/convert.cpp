// Conversion between .dqf, HDF5 and FRD files (daqflow/apps/output/convert.hpp): a reader per
// format that hands over record after record, a writer per format that takes them.

#include "daqflow/apps/output/convert.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "daqflow/apps/output/frd.hpp"
#include "daqflow/apps/output/reader.hpp"
#include "daqflow/core/net.hpp"
#include "daqflow/wire/crc32c.hpp"

namespace daqflow::apps::output {
namespace {

namespace fs = std::filesystem;

// A record, with what its file said of itself so far (complete before the first record).
using OnRecord =
    std::function<Result<void>(const DataFileInfo&, const Hdf5Record&, std::span<const std::byte>)>;

Error io_error(const std::string& what, const std::string& path) {
  return Error(code_of_errno(errno), fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

Error bad_file(const std::string& path, const std::string& what) {
  return Error(ErrorCode::invalid_argument, fmt::format("{}: {}", path, what));
}

Result<void> checked(const std::string& path, DataFileInfo& info, const Hdf5Record& r,
                     std::span<const std::byte> data, const OnRecord& on_record) {
  if (wire::crc32c(data) != r.crc32c) {
    return bad_file(path, fmt::format("the record of event id {}: CRC-32C mismatch", r.event));
  }
  if (info.info.lumi == 0) info.info.lumi = r.lumi;  // a file of one section: its first's
  return on_record(info, r, data);
}

// .dqf and FRD files: mapped and indexed (reader.hpp), each record checked as it is handed over.
Result<DataFileInfo> read_mapped(const std::string& path, const OnRecord& on_record) {
  auto reader = DataFileReader::open(path);
  if (!reader) return reader.error();
  if (reader->truncated()) {
    return bad_file(
        path, fmt::format("byte {}: a torn record",
                          reader->records().empty()
                              ? reader->bytes().size()
                              : reader->records().back().offset + reader->records().back().size));
  }
  DataFileInfo out{reader->format(), reader->info()};
  for (const Hdf5Record& record : reader->records()) {
    Hdf5Record r = record;
    r.offset = 0;
    if (auto ok = checked(path, out, r, reader->data(record), on_record); !ok) return ok.error();
  }
  return out;
}

Result<DataFileInfo> read_hdf5(const std::string& path, const OnRecord& on_record) {
  auto reader = Hdf5Reader::open(path);
  if (!reader) return reader.error();
  const Hdf5Reader& r = **reader;
  DataFileInfo out{DataFormat::hdf5, r.info()};
  std::vector<std::byte> data;
  for (const Hdf5Record& record : r.index()) {
    data.resize(record.size);
    if (auto read = r.read(record.offset, data); !read) return read.error().context(path);
    if (auto ok = checked(path, out, record, data, on_record); !ok) return ok.error();
  }
  return out;
}

// A file of the target format, written record by record under a temporary name.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual Result<void> add(const Hdf5Record& r, std::span<const std::byte> data) = 0;
  // Completes the file and puts it in place; returns its path.
  virtual Result<std::string> finish() = 0;
  // After a failure: the unfinished file is removed, so that no half file is left behind.
  virtual void abandon() = 0;
};

Result<void> rename_into_place(const std::string& from, const std::string& to) {
  std::error_code ec;
  if (fs::exists(to, ec)) return Error(ErrorCode::conflict, to + " exists already");
  if (::rename(from.c_str(), to.c_str()) != 0) return io_error("renaming", from);
  return ok();
}

// PATH.part, made anew (an existing one is refused).
Result<core::UniqueFd> create_part(const std::string& path) {
  const std::string part = path + std::string(kPartSuffix);
  core::UniqueFd fd(::open(part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd) return io_error("creating", part);
  return fd;
}

// Writes whole buffers to a file descriptor.
Result<void> write_all(int fd, std::span<const std::byte> data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("writing", path);
    data = data.subspan(static_cast<std::size_t>(n));
  }
  return ok();
}

// A sink that writes a file's bytes itself, into PATH.part, renamed PATH when complete.
class ByteSink : public Sink {
 protected:
  ByteSink(std::string path, const Hdf5FileInfo& info) : path_(std::move(path)), info_(info) {}

  // Creates PATH.part and writes its head.
  Result<void> create(std::span<const std::byte> head) {
    auto fd = create_part(path_);
    if (!fd) return fd.error();
    fd_ = std::move(*fd);
    bytes_ = head.size();
    return write_all(fd_.get(), head, part());
  }
  // One record: its header, then its bytes.
  Result<void> put(std::span<const std::byte> header, std::span<const std::byte> data) {
    if (auto w = write_all(fd_.get(), header, part()); !w) return w;
    if (auto w = write_all(fd_.get(), data, part()); !w) return w;
    ++events_;
    bytes_ += header.size() + data.size();
    return ok();
  }
  // Syncs, closes and renames it into place.
  Result<void> place() {
    if (::fsync(fd_.get()) != 0) return io_error("syncing", part());
    fd_.reset();
    return rename_into_place(part(), path_);
  }
  [[nodiscard]] std::string part() const { return path_ + std::string(kPartSuffix); }
  void abandon() override {
    fd_.reset();
    ::unlink(part().c_str());
  }

  std::string path_;
  Hdf5FileInfo info_;
  core::UniqueFd fd_;
  std::uint64_t events_ = 0;
  std::uint64_t bytes_ = 0;
};

class DqfSink final : public ByteSink {
 public:
  DqfSink(std::string path, const Hdf5FileInfo& info) : ByteSink(std::move(path), info) {}

  Result<void> open() {
    std::array<std::byte, kMaxFileHeaderSize> header{};
    const std::size_t size = encode_file_header(
        FileHeader{kFileVersion, info_.run, info_.sequence, info_.writer, info_.content}, header);
    if (size == 0) return bad_file(path_, "the writer's name '" + info_.writer + "' is too long");
    crc_ = wire::crc32c(std::span(header.data(), size));
    return create(std::span(header.data(), size));
  }
  Result<void> add(const Hdf5Record& r, std::span<const std::byte> data) override {
    std::array<std::byte, kRecordHeaderSize> header{};
    encode_record_header(RecordHeader{r.flags, r.event, r.size, r.pieces, r.crc32c}, header);
    crc_ = crc32c_combine(wire::crc32c(header, crc_), r.crc32c, r.size);
    if (events_ == 0) first_ = r.event;
    last_ = r.event;
    return put(header, data);
  }
  Result<std::string> finish() override {
    if (auto r = place(); !r) return r.error();
    const std::string stem = path_.substr(0, path_.size() - kDataSuffix.size());
    const Sidecar sidecar{info_.run, info_.writer, fs::path(path_).filename().string(),
                          events_,   bytes_,       first_,
                          last_,     crc_,         info_.lumi};
    std::ofstream out(stem + std::string(kSidecarSuffix));
    out << to_json(sidecar).dump(2) << "\n";
    if (!out) return io_error("writing the sidecar of", path_);
    return path_;
  }

 private:
  std::uint32_t crc_ = 0;
  std::uint64_t first_ = 0;
  std::uint64_t last_ = 0;
};

class FrdSink final : public ByteSink {
 public:
  FrdSink(std::string path, const Hdf5FileInfo& info) : ByteSink(std::move(path), info) {}

  Result<void> open() {
    const std::array<std::byte, kRawFileHeaderSize> room{};  // written at the end
    return create(room);
  }
  Result<void> add(const Hdf5Record& r, std::span<const std::byte> data) override {
    if (events_ == kMaxRawFileEvents) {
      return bad_file(path_, fmt::format("more than {} events, the most an FRD file counts",
                                         kMaxRawFileEvents));
    }
    if (r.size > UINT32_MAX) return bad_file(path_, "an event too large for an FRD header");
    std::array<std::byte, kFrdHeaderSize> header{};
    encode_frd_header(FrdHeader{kFrdVersion, 0, info_.run, r.lumi != 0 ? r.lumi : info_.lumi,
                                static_cast<std::uint32_t>(r.event),
                                static_cast<std::uint32_t>(r.size), r.crc32c},
                      header);
    return put(header, data);
  }
  Result<std::string> finish() override {
    std::array<std::byte, kRawFileHeaderSize> header{};
    encode_raw_file_header(RawFileHeader{static_cast<std::uint16_t>(events_), info_.lumi, bytes_},
                           header);
    if (::pwrite(fd_.get(), header.data(), header.size(), 0) !=
        static_cast<ssize_t>(header.size())) {
      return io_error("finishing", part());
    }
    if (auto r = place(); !r) return r.error();
    return path_;
  }
};

class Hdf5Sink final : public Sink {
 public:
  Hdf5Sink(std::string path, std::unique_ptr<Hdf5Writer> writer)
      : path_(std::move(path)), writer_(std::move(writer)) {}

  Result<void> add(const Hdf5Record& r, std::span<const std::byte> data) override {
    // Appended in batches of up to 16 MiB.
    if (!records_.empty() && staged_.size() + data.size() > (std::size_t{16} << 20)) {
      if (auto f = flush(); !f) return f;
    }
    records_.push_back(r);
    staged_.insert(staged_.end(), data.begin(), data.end());
    return ok();
  }
  void abandon() override {
    const std::string part = writer_->path();
    (void)writer_->close();
    ::unlink(part.c_str());
  }
  Result<std::string> finish() override {
    if (auto f = flush(); !f) return f.error();
    const std::string part = writer_->path();
    if (auto c = writer_->close(); !c) return c.error();
    if (auto r = rename_into_place(part, path_); !r) return r.error();
    return path_;
  }

 private:
  Result<void> flush() {
    auto r = writer_->append(records_, staged_);
    records_.clear();
    staged_.clear();
    return r;
  }
  std::string path_;
  std::unique_ptr<Hdf5Writer> writer_;
  std::vector<Hdf5Record> records_;
  std::vector<std::byte> staged_;
};

}  // namespace

namespace {

constexpr std::array<std::pair<DataFormat, std::string_view>, 3> kFormatNames{{
    {DataFormat::dqf, "dqf"},
    {DataFormat::hdf5, "hdf5"},
    {DataFormat::frd, "frd"},
}};

}  // namespace

std::string_view to_string(DataFormat format) {
  for (const auto& [f, name] : kFormatNames) {
    if (f == format) return name;
  }
  return "unknown";
}

Result<DataFormat> parse_data_format(std::string_view name) {
  for (const auto& [f, known] : kFormatNames) {
    if (known == name) return f;
  }
  return Error(fmt::format("unknown format '{}' (known: dqf, hdf5, frd)", name));
}

Result<DataFormat> format_of(const std::string& path) {
  if (path.ends_with(kPartSuffix)) {
    return Error(ErrorCode::invalid_argument,
                 path + ": still being written, or its writer died (daqflow salvage finishes it)");
  }
  if (path.ends_with(kDataSuffix)) return DataFormat::dqf;
  if (path.ends_with(kHdf5Suffix)) return DataFormat::hdf5;
  if (path.ends_with(".raw")) return DataFormat::frd;
  return Error(ErrorCode::invalid_argument, path + ": not a data file (.dqf, .h5 or FRD .raw)");
}

namespace {

Result<DataFileInfo> read_any(const std::string& path, const OnRecord& on_record) {
  auto format = format_of(path);
  if (!format) return format.error();
  switch (*format) {
    case DataFormat::dqf:
    case DataFormat::frd:
      return read_mapped(path, on_record);
    case DataFormat::hdf5:
      return read_hdf5(path, on_record);
  }
  return Error(ErrorCode::internal, "unknown format");
}

// Opens the target file once the source has said what it is.
Result<std::unique_ptr<Sink>> make_sink(const DataFileInfo& source, const std::string& path,
                                        DataFormat to, const std::string& out_dir,
                                        const Hdf5WriteOptions& hdf5) {
  std::string stem = fs::path(path).stem().string();
  if (to == DataFormat::frd) {
    stem = frd_data_stem(source.info.run, source.info.lumi, source.info.sequence);
  }
  const std::string suffix = to == DataFormat::dqf    ? std::string(kDataSuffix)
                             : to == DataFormat::hdf5 ? std::string(kHdf5Suffix)
                                                      : std::string(".raw");
  const std::string target = (fs::path(out_dir) / (stem + suffix)).string();
  std::error_code ec;
  if (fs::exists(target, ec)) return Error(ErrorCode::conflict, target + " exists already");
  if (to == DataFormat::dqf) {
    auto s = std::make_unique<DqfSink>(target, source.info);
    if (auto r = s->open(); !r) return r.error();
    return std::unique_ptr<Sink>(std::move(s));
  }
  if (to == DataFormat::frd) {
    auto s = std::make_unique<FrdSink>(target, source.info);
    if (auto r = s->open(); !r) return r.error();
    return std::unique_ptr<Sink>(std::move(s));
  }
  auto writer = Hdf5Writer::create(target + std::string(kPartSuffix), source.info, hdf5);
  if (!writer) return writer.error();
  return std::unique_ptr<Sink>(std::make_unique<Hdf5Sink>(target, std::move(*writer)));
}

}  // namespace

Result<DataFileInfo> read_data_file(
    const std::string& path,
    const std::function<Result<void>(const Hdf5Record&, std::span<const std::byte>)>& on_record) {
  return read_any(path, [&](const DataFileInfo&, const Hdf5Record& r,
                            std::span<const std::byte> data) { return on_record(r, data); });
}

Result<std::string> convert_data_file(const std::string& path, DataFormat to,
                                      const std::string& out_dir, const Hdf5WriteOptions& hdf5) {
  std::unique_ptr<Sink> sink;
  auto read = read_any(path,
                       [&](const DataFileInfo& source, const Hdf5Record& r,
                           std::span<const std::byte> data) -> Result<void> {
                         if (!sink) {
                           auto made = make_sink(source, path, to, out_dir, hdf5);
                           if (!made) return made.error();
                           sink = std::move(*made);
                         }
                         return sink->add(r, data);
                       });
  if (!read) {
    if (sink) sink->abandon();
    return read.error();
  }
  if (!sink) {  // a file without records: its attributes only
    auto made = make_sink(*read, path, to, out_dir, hdf5);
    if (!made) return made.error();
    sink = std::move(*made);
  }
  auto done = sink->finish();
  if (!done) sink->abandon();
  return done;
}

}  // namespace daqflow::apps::output
