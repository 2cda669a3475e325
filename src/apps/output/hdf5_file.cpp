// daqflow's HDF5 event files (daqflow/apps/output/hdf5_file.hpp) through the HDF5 C library.

#include "daqflow/apps/output/hdf5_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <hdf5.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "daqflow/apps/fed/event_numbers.hpp"
#include "daqflow/core/net.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "daqflow/wire/evb.hpp"
#include "event_checks.hpp"

namespace daqflow::apps::output {
namespace {

// An HDF5 identifier closed by its own function when it goes out of scope.
class Id {
 public:
  Id() = default;
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Id() { reset(); }
  Id(Id&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = H5I_INVALID_HID; }
  Id& operator=(Id&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;

  [[nodiscard]] hid_t get() const { return id_; }
  [[nodiscard]] bool valid() const { return id_ >= 0; }
  // Closes now; false (and HDF5's error) when closing failed.
  bool reset() {
    const bool ok = id_ < 0 || close_(id_) >= 0;
    id_ = H5I_INVALID_HID;
    return ok;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

// HDF5 prints its error stack to stderr by default; daqflow reports errors itself.
void quiet_hdf5() {
  static std::once_flag once;
  std::call_once(once, [] { (void)H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

// The innermost description on HDF5's error stack (the most specific), for messages.
std::string hdf5_error() {
  std::string out;
  (void)H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned /*n*/, const H5E_error2_t* e, void* data) -> herr_t {
        auto* text = static_cast<std::string*>(data);
        if (e->desc != nullptr && e->desc[0] != '\0') *text = e->desc;
        return 0;
      },
      &out);
  (void)H5Eclear2(H5E_DEFAULT);
  return out.empty() ? std::string("an HDF5 error") : out;
}

Error failure(const std::string& path, const std::string& what) {
  return Error(ErrorCode::unavailable, fmt::format("{}: {}: {}", path, what, hdf5_error()));
}

// The compound type of /index: little-endian integers at fixed offsets in the file, the
// struct's layout in memory.
Id index_type(bool file) {
  const auto u64 = file ? H5T_STD_U64LE : H5T_NATIVE_UINT64;
  const auto u32 = file ? H5T_STD_U32LE : H5T_NATIVE_UINT32;
  const std::size_t size = file ? 48 : sizeof(Hdf5Record);
  Id t(H5Tcreate(H5T_COMPOUND, size), H5Tclose);
  const auto at = [file](std::size_t packed, std::size_t in_memory) {
    return file ? packed : in_memory;
  };
  (void)H5Tinsert(t.get(), "event", at(0, offsetof(Hdf5Record, event)), u64);
  (void)H5Tinsert(t.get(), "offset", at(8, offsetof(Hdf5Record, offset)), u64);
  (void)H5Tinsert(t.get(), "size", at(16, offsetof(Hdf5Record, size)), u64);
  (void)H5Tinsert(t.get(), "lumi", at(24, offsetof(Hdf5Record, lumi)), u32);
  (void)H5Tinsert(t.get(), "flags", at(28, offsetof(Hdf5Record, flags)), u32);
  (void)H5Tinsert(t.get(), "pieces", at(32, offsetof(Hdf5Record, pieces)), u32);
  (void)H5Tinsert(t.get(), "crc32c", at(36, offsetof(Hdf5Record, crc32c)), u32);
  return t;
}

bool write_attribute(hid_t object, const char* name, std::uint64_t value) {
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  Id a(H5Acreate2(object, name, H5T_STD_U64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  return a.valid() && H5Awrite(a.get(), H5T_NATIVE_UINT64, &value) >= 0;
}

bool write_attribute(hid_t object, const char* name, std::uint32_t value) {
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  Id a(H5Acreate2(object, name, H5T_STD_U32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  return a.valid() && H5Awrite(a.get(), H5T_NATIVE_UINT32, &value) >= 0;
}

// A variable-length UTF-8 string: what h5py reads as str (a fixed-length one reads as bytes).
Id string_type() {
  Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  (void)H5Tset_size(type.get(), H5T_VARIABLE);
  (void)H5Tset_cset(type.get(), H5T_CSET_UTF8);
  return type;
}

bool write_attribute(hid_t object, const char* name, std::string_view value) {
  const Id type = string_type();
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  Id a(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const std::string text(value);
  const char* data = text.c_str();
  return a.valid() && H5Awrite(a.get(), type.get(), &data) >= 0;
}

bool read_attribute(hid_t object, const char* name, std::uint32_t& out) {
  Id a(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  return a.valid() && H5Aread(a.get(), H5T_NATIVE_UINT32, &out) >= 0;
}

bool read_attribute(hid_t object, const char* name, std::string& out) {
  Id a(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  if (!a.valid()) return false;
  Id type(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING) return false;
  if (H5Tis_variable_str(type.get()) <= 0) {  // fixed length, as other writers may store it
    out.assign(H5Tget_size(type.get()), '\0');
    if (H5Aread(a.get(), type.get(), out.data()) < 0) return false;
    out.resize(std::strlen(out.c_str()));
    return true;
  }
  const Id memory = string_type();
  char* text = nullptr;
  if (H5Aread(a.get(), memory.get(), &text) < 0) return false;
  out = text != nullptr ? text : "";
  Id space(H5Aget_space(a.get()), H5Sclose);
  (void)H5Dvlen_reclaim(memory.get(), space.get(), H5P_DEFAULT, &text);
  return true;
}

// A one-dimensional dataset's length.
hsize_t length_of(hid_t dataset) {
  Id space(H5Dget_space(dataset), H5Sclose);
  hsize_t n = 0;
  if (!space.valid() || H5Sget_simple_extent_dims(space.get(), &n, nullptr) != 1) return 0;
  return n;
}

// Grows a one-dimensional dataset by count elements from memory, written at its old end.
bool append_rows(hid_t dataset, hid_t memory_type, hsize_t at, hsize_t count, const void* data) {
  const hsize_t size = at + count;
  if (H5Dset_extent(dataset, &size) < 0) return false;
  Id file_space(H5Dget_space(dataset), H5Sclose);
  Id memory_space(H5Screate_simple(1, &count, nullptr), H5Sclose);
  return file_space.valid() && memory_space.valid() &&
         H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &at, nullptr, &count, nullptr) >=
             0 &&
         H5Dwrite(dataset, memory_type, memory_space.get(), file_space.get(), H5P_DEFAULT, data) >=
             0;
}

bool read_rows(hid_t dataset, hid_t memory_type, hsize_t at, hsize_t count, void* out) {
  if (count == 0) return true;
  Id file_space(H5Dget_space(dataset), H5Sclose);
  Id memory_space(H5Screate_simple(1, &count, nullptr), H5Sclose);
  return file_space.valid() && memory_space.valid() &&
         H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &at, nullptr, &count, nullptr) >=
             0 &&
         H5Dread(dataset, memory_type, memory_space.get(), file_space.get(), H5P_DEFAULT, out) >= 0;
}

std::string_view content_name(FileContent content) {
  switch (content) {
    case FileContent::built_events:
      return "built_events";
    case FileContent::farm_decisions:
      return "farm_decisions";
    case FileContent::timeslices:
      return "timeslices";
  }
  return "unknown";
}

}  // namespace

struct Hdf5Writer::Handles {
  Id file;
  Id data;
  Id index;
  Id index_memory_type = index_type(false);
};

Hdf5Writer::Hdf5Writer(std::string path, std::unique_ptr<Handles> handles)
    : path_(std::move(path)), h_(std::move(handles)) {}

Hdf5Writer::~Hdf5Writer() {
  (void)close();
}

Result<std::unique_ptr<Hdf5Writer>> Hdf5Writer::create(const std::string& path,
                                                       const Hdf5FileInfo& info,
                                                       const Hdf5WriteOptions& options) {
  quiet_hdf5();
  auto h = std::make_unique<Handles>();
  // The latest format: what SWMR needs (and chunk indexes made for appending).
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  (void)H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  h->file = Id(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()), H5Fclose);
  if (!h->file.valid()) return failure(path, "creating the file");
  const hid_t root = h->file.get();
  const std::string_view compression = options.compression == Hdf5Compression::gzip
                                           ? std::string_view("gzip")
                                           : std::string_view("none");
  if (!write_attribute(root, "format", kHdf5Format) ||
      !write_attribute(root, "format_version", kHdf5FormatVersion) ||
      !write_attribute(root, "content", content_name(info.content)) ||
      !write_attribute(root, "run", info.run) || !write_attribute(root, "writer", info.writer) ||
      !write_attribute(root, "sequence", info.sequence) ||
      !write_attribute(root, "luminosity_section", info.lumi) ||
      !write_attribute(root, "compression", compression)) {
    return failure(path, "writing the file's attributes");
  }

  const hsize_t zero = 0;
  const hsize_t unlimited = H5S_UNLIMITED;
  Id space(H5Screate_simple(1, &zero, &unlimited), H5Sclose);
  const auto dataset = [&](const char* name, hid_t type, hsize_t chunk, bool shuffle) {
    Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    (void)H5Pset_chunk(dcpl.get(), 1, &chunk);
    if (options.compression == Hdf5Compression::gzip) {
      if (shuffle) (void)H5Pset_shuffle(dcpl.get());
      (void)H5Pset_deflate(dcpl.get(), static_cast<unsigned>(options.gzip_level));
    }
    // Room for the last, partly filled chunk between batches.
    Id dapl(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
    (void)H5Pset_chunk_cache(dapl.get(), 0, 0, 1.0);
    return Id(H5Dcreate2(root, name, type, space.get(), H5P_DEFAULT, dcpl.get(), dapl.get()),
              H5Dclose);
  };
  h->data = dataset("data", H5T_STD_U8LE, options.data_chunk_bytes, false);
  const Id file_index_type = index_type(true);
  h->index = dataset("index", file_index_type.get(), options.index_chunk_rows, true);
  if (!h->data.valid() || !h->index.valid()) return failure(path, "creating the datasets");
  if (!write_attribute(h->data.get(), "description",
                       "every record's bytes, back to back; /index says where each lies") ||
      !write_attribute(h->index.get(), "description",
                       "per record: event id, offset and size of its bytes in /data, "
                       "luminosity section, flags, pieces, CRC-32C of its bytes")) {
    return failure(path, "writing the datasets' attributes");
  }
  if (H5Fstart_swmr_write(root) < 0) return failure(path, "starting SWMR writing");
  std::unique_ptr<Hdf5Writer> w(new Hdf5Writer(path, std::move(h)));
  w->built_events_ = info.content == FileContent::built_events;
  return w;
}

Result<void> Hdf5Writer::append(std::span<Hdf5Record> records, std::span<const std::byte> data) {
  if (!h_ || !h_->file.valid()) return Error(ErrorCode::internal, path_ + ": appended to closed");
  std::uint64_t offset = bytes_;
  for (Hdf5Record& r : records) {
    r.offset = offset;
    offset += r.size;
  }
  if (built_events_) {
    // The FEDs of each event, walked from its end as a reader would (structure only).
    wire::FedCheck structure;
    structure.verify_crc = false;
    structure.allow_reserved_bits = structure.allow_receiver_errors = true;
    std::size_t at = 0;
    for (const Hdf5Record& r : records) {
      if (at + r.size > data.size()) break;
      const auto event = data.subspan(at, r.size);
      at += r.size;
      infos_.resize(std::max<std::size_t>(infos_.size(), r.size / wire::kFedMinFragmentSize + 1));
      const wire::FedWalk walk = wire::walk_super_fragment(event, infos_, structure);
      for (std::size_t i = 0; i < walk.count; ++i) sources_[infos_[i].source_id] = true;
    }
  }
  if (offset - bytes_ != data.size()) {
    return Error(ErrorCode::internal, fmt::format("{}: records of {} bytes, {} given", path_,
                                                  offset - bytes_, data.size()));
  }
  if (!data.empty() &&
      !append_rows(h_->data.get(), H5T_NATIVE_UINT8, bytes_, data.size(), data.data())) {
    return failure(path_, "writing data");
  }
  // The data reaches the file before the index rows that point into it.
  if (H5Dflush(h_->data.get()) < 0) return failure(path_, "flushing data");
  if (!records.empty() && !append_rows(h_->index.get(), h_->index_memory_type.get(), records_,
                                       records.size(), records.data())) {
    return failure(path_, "writing the index");
  }
  if (H5Dflush(h_->index.get()) < 0) return failure(path_, "flushing the index");
  records_ += records.size();
  bytes_ = offset;
  return ok();
}

Result<void> Hdf5Writer::close() {
  if (!h_ || !h_->file.valid()) return ok();
  // Each closed whatever the others did.
  const bool data_closed = h_->data.reset();
  const bool index_closed = h_->index.reset();
  const bool file_closed = h_->file.reset();
  const bool closed = data_closed && index_closed && file_closed;
  h_.reset();
  if (!closed) return failure(path_, "closing");
  // SWMR forbids new attributes while writing: those known at the end go in now.
  {
    Id file(H5Fopen(path_.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
    if (!file.valid()) return failure(path_, "reopening to finish");
    bool ok = write_attribute(file.get(), "events", records_);
    if (built_events_) {
      std::vector<std::uint16_t> ids;
      for (std::size_t id = 0; id < sources_.size(); ++id) {
        if (sources_[id]) ids.push_back(static_cast<std::uint16_t>(id));
      }
      const hsize_t n = ids.size();
      Id space(n == 0 ? H5Screate(H5S_NULL) : H5Screate_simple(1, &n, nullptr), H5Sclose);
      Id a(H5Acreate2(file.get(), "source_ids", H5T_STD_U16LE, space.get(), H5P_DEFAULT,
                      H5P_DEFAULT),
           H5Aclose);
      ok = ok && a.valid() && (n == 0 || H5Awrite(a.get(), H5T_NATIVE_UINT16, ids.data()) >= 0);
    }
    if (!ok || !file.reset()) return failure(path_, "writing the attributes of its end");
  }
  core::UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd || ::fsync(fd.get()) != 0) {
    return Error(code_of_errno(errno), fmt::format("{}: syncing: {}", path_, std::strerror(errno)));
  }
  return ok();
}

struct Hdf5Reader::Handles {
  Id file;
  Id data;
  Id index;
};

Hdf5Reader::Hdf5Reader(std::unique_ptr<Handles> handles) : h_(std::move(handles)) {}
Hdf5Reader::~Hdf5Reader() = default;

Result<std::unique_ptr<Hdf5Reader>> Hdf5Reader::open(const std::string& path) {
  quiet_hdf5();
  auto h = std::make_unique<Handles>();
  // SWMR reading: a file still marked open by its writer (or by one that died) opens too.
  h->file = Id(H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT), H5Fclose);
  if (!h->file.valid()) return failure(path, "opening");
  const hid_t root = h->file.get();
  std::string format;
  std::string content;
  std::uint32_t version = 0;
  if (!read_attribute(root, "format", format) || format != kHdf5Format ||
      !read_attribute(root, "format_version", version)) {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("{}: not a daqflow HDF5 event file (no format attribute '{}')", path,
                             kHdf5Format));
  }
  if (version != kHdf5FormatVersion) {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("{}: format_version {}, this daqflow reads {}", path, version,
                             kHdf5FormatVersion));
  }
  std::unique_ptr<Hdf5Reader> r(new Hdf5Reader(std::move(h)));
  Hdf5FileInfo& info = r->info_;
  if (!read_attribute(root, "content", content) || !read_attribute(root, "run", info.run) ||
      !read_attribute(root, "writer", info.writer) ||
      !read_attribute(root, "sequence", info.sequence) ||
      !read_attribute(root, "luminosity_section", info.lumi)) {
    return failure(path, "reading the file's attributes");
  }
  if (content == content_name(FileContent::farm_decisions)) {
    info.content = FileContent::farm_decisions;
  } else if (content == content_name(FileContent::timeslices)) {
    info.content = FileContent::timeslices;
  } else if (content != content_name(FileContent::built_events)) {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("{}: unknown content '{}'", path, content));
  }
  Handles& hh = *r->h_;
  hh.data = Id(H5Dopen2(root, "data", H5P_DEFAULT), H5Dclose);
  hh.index = Id(H5Dopen2(root, "index", H5P_DEFAULT), H5Dclose);
  if (!hh.data.valid() || !hh.index.valid()) return failure(path, "opening the datasets");
  r->data_size_ = length_of(hh.data.get());
  r->index_.resize(length_of(hh.index.get()));
  const Id memory_type = index_type(false);
  if (!read_rows(hh.index.get(), memory_type.get(), 0, r->index_.size(), r->index_.data())) {
    return failure(path, "reading the index");
  }
  return r;
}

Result<void> Hdf5Reader::read(std::uint64_t offset, std::span<std::byte> out) const {
  if (offset > data_size_ || out.size() > data_size_ - offset) {
    return Error(ErrorCode::invalid_argument, fmt::format("bytes {}..{} are past the data's {}",
                                                          offset, offset + out.size(), data_size_));
  }
  if (!read_rows(h_->data.get(), H5T_NATIVE_UINT8, offset, out.size(), out.data())) {
    return Error(ErrorCode::unavailable, "reading data: " + hdf5_error());
  }
  return ok();
}

FileReport check_hdf5_file(const std::string& path,
                           const std::function<void(const EventSummary&)>& on_event) {
  FileReport report;
  report.path = path;
  report.complete = path.ends_with(kHdf5Suffix);
  auto reader = Hdf5Reader::open(path);
  if (!reader) {
    report.problems.push_back(reader.error().message());
    return report;
  }
  const Hdf5Reader& r = **reader;
  report.run_number = r.info().run;
  report.sequence = r.info().sequence;
  report.bu_id = r.info().writer;
  report.content = r.info().content;
  std::vector<std::byte> data;
  std::vector<wire::FedFragmentInfo> infos;
  std::uint64_t offset = 0;
  for (const Hdf5Record& record : r.index()) {
    EventSummary summary;
    summary.content = report.content;
    summary.record =
        RecordHeader{record.flags, record.event, record.size, record.pieces, record.crc32c};
    summary.data_offset = record.offset;
    const std::string name = report.content == FileContent::timeslices
                                 ? fmt::format("timeslice {}", record.event)
                                 : fed::event_name(record.event);
    if (record.offset != offset || record.size > r.data_size() - record.offset) {
      report.problems.push_back(fmt::format(
          "{}: {}: its bytes {}..{} are not where the index's previous record ends "
          "({}) within /data ({} bytes)",
          path, name, record.offset, record.offset + record.size, offset, r.data_size()));
      break;
    }
    data.resize(record.size);
    if (auto read = r.read(record.offset, data); !read) {
      report.problems.push_back(fmt::format("{}: {}: {}", path, name, read.error().message()));
      break;
    }
    offset = record.offset + record.size;
    report.checksum = wire::crc32c(data, report.checksum);
    ++report.events;
    report.bytes += record.size;
    const bool corrupted = (record.flags & wire::kEventCorrupted) != 0;
    if (corrupted) ++report.corrupted_events;
    if (const std::uint32_t crc = wire::crc32c(data); crc != record.crc32c) {
      summary.problem =
          fmt::format("CRC32C mismatch (index {:08x}, computed {:08x})", record.crc32c, crc);
      report.problems.push_back(fmt::format("{}: {}: {}", path, name, summary.problem));
    } else {
      check_record_contents(data, summary, infos);
      if (!summary.problem.empty() && !corrupted) {
        report.problems.push_back(fmt::format("{}: {}: {}", path, name, summary.problem));
      }
    }
    if (on_event) on_event(summary);
  }
  // A file being written (or whose writer died) may hold data its index does not point to yet.
  if (report.complete && offset != r.data_size() && report.problems.empty()) {
    report.problems.push_back(fmt::format("{}: /data holds {} bytes, the index's records {}", path,
                                          r.data_size(), offset));
  }
  return report;
}

}  // namespace daqflow::apps::output
