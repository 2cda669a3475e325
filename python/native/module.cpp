// daqflow._native: the Python package's window on daqflow's C++ readers (daqflow/apps/output/
// reader.hpp). A DataFile maps a file once; its bytes reach Python as one read-only numpy array
// over the mapping (which the DataFile keeps alive), its records and pieces as columns of
// numbers. The Python side (daqflow/reader.py) slices the one array: no byte is copied.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "daqflow/apps/output/reader.hpp"
#include "daqflow/version.hpp"
#include "daqflow/wire/fed.hpp"

namespace nb = nanobind;

namespace {

using daqflow::apps::output::DataFileReader;
using daqflow::apps::output::EventSummary;
using daqflow::apps::output::FileContent;
using daqflow::apps::output::FileReport;

using Bytes = nb::ndarray<nb::numpy, const std::uint8_t, nb::ndim<1>>;
template <typename T>
using Column = nb::ndarray<nb::numpy, T, nb::ndim<1>>;

// A column of numbers that owns its storage (a vector moved into a capsule).
template <typename T>
Column<T> column(std::vector<T>&& values) {
  auto* owned = new std::vector<T>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return Column<T>(owned->data(), {owned->size()}, owner);
}

std::string content_name(FileContent content) {
  switch (content) {
    case FileContent::built_events:
      return "events";
    case FileContent::farm_decisions:
      return "decisions";
    case FileContent::timeslices:
      return "timeslices";
  }
  return "unknown";
}

// What verify() found: the file's problems, and each record with one.
struct Verification {
  std::vector<std::string> problems;
  std::vector<std::tuple<std::uint64_t, std::int32_t, std::string>> bad_records;
  std::uint64_t records = 0;
  bool complete = false;
};

class DataFile {
 public:
  explicit DataFile(const std::string& path) : reader_(open(path)) {}

  [[nodiscard]] const DataFileReader& reader() const { return reader_; }

  [[nodiscard]] nb::dict records() const {
    const auto& rows = reader_.records();
    std::vector<std::uint64_t> event(rows.size()), offset(rows.size()), size(rows.size());
    std::vector<std::uint32_t> lumi(rows.size()), flags(rows.size()), pieces(rows.size()),
        crc(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      event[i] = rows[i].event;
      offset[i] = rows[i].offset;
      size[i] = rows[i].size;
      lumi[i] = rows[i].lumi;
      flags[i] = rows[i].flags;
      pieces[i] = rows[i].pieces;
      crc[i] = rows[i].crc32c;
    }
    nb::dict out;
    out["number"] = column(std::move(event));
    out["offset"] = column(std::move(offset));
    out["size"] = column(std::move(size));
    out["lumi"] = column(std::move(lumi));
    out["flags"] = column(std::move(flags));
    out["pieces"] = column(std::move(pieces));
    out["crc32c"] = column(std::move(crc));
    return out;
  }

  // Every record's pieces in one table: which record, source, offset and size in the file, and
  // for timeslice components their microslice descriptors (offset, count).
  [[nodiscard]] nb::dict pieces() const {
    std::vector<std::uint64_t> record, offset, size, descriptors;
    std::vector<std::uint32_t> source, microslices;
    reader_.prefault();  // every record is visited
    for (std::size_t i = 0; i < reader_.records().size(); ++i) {
      auto p = reader_.pieces(i);
      if (!p) throw nb::value_error(p.error().message().c_str());
      for (const auto& piece : *p) {
        record.push_back(i);
        source.push_back(piece.source);
        offset.push_back(piece.offset);
        size.push_back(piece.size);
        descriptors.push_back(piece.descriptors);
        microslices.push_back(piece.microslices);
      }
    }
    nb::dict out;
    out["record"] = column(std::move(record));
    out["source"] = column(std::move(source));
    out["offset"] = column(std::move(offset));
    out["size"] = column(std::move(size));
    out["descriptors"] = column(std::move(descriptors));
    out["microslices"] = column(std::move(microslices));
    return out;
  }

  [[nodiscard]] Verification verify() const {
    Verification v;
    FileReport report;
    {
      nb::gil_scoped_release released;
      report = reader_.verify([&](const EventSummary& e) {
        if (!e.problem.empty())
          v.bad_records.emplace_back(e.record.event, e.problem_source, e.problem);
      });
    }
    v.problems = std::move(report.problems);
    v.records = report.events;
    v.complete = report.complete;
    return v;
  }

 private:
  static DataFileReader open(const std::string& path) {
    auto r = DataFileReader::open(path);
    if (!r) {
      PyErr_SetString(r.error().code() == daqflow::ErrorCode::not_found ? PyExc_FileNotFoundError
                                                                        : PyExc_ValueError,
                      r.error().message().c_str());
      throw nb::python_error();
    }
    return std::move(*r);
  }

  DataFileReader reader_;
};

// The whole mapping as one read-only array, kept alive by the DataFile it came from.
Bytes buffer_of(nb::handle self) {
  const DataFile& file = nb::cast<const DataFile&>(self);
  const auto bytes = file.reader().bytes();
  static const std::uint8_t empty = 0;
  const auto* data = bytes.empty() ? &empty : reinterpret_cast<const std::uint8_t*>(bytes.data());
  return Bytes(data, {bytes.size()}, self);
}

// The FED fragments of a built event's bytes, walked from the end (structure only): their
// sources, offsets and sizes; an error names what is wrong where.
std::tuple<Column<std::uint32_t>, Column<std::uint64_t>, Column<std::uint64_t>> split_fragments(
    nb::ndarray<const std::uint8_t, nb::ndim<1>, nb::c_contig> event) {
  const std::span<const std::byte> data(reinterpret_cast<const std::byte*>(event.data()),
                                        event.shape(0));
  std::vector<daqflow::wire::FedFragmentInfo> infos(
      data.size() / daqflow::wire::kFedMinFragmentSize + 1);
  daqflow::wire::FedCheck structure_only;
  structure_only.verify_crc = false;
  structure_only.allow_reserved_bits = true;
  structure_only.allow_receiver_errors = true;
  const auto walk = daqflow::wire::walk_super_fragment(data, infos, structure_only);
  if (walk.status != daqflow::wire::FedStatus::ok) {
    const std::string what = "FED fragments: byte " + std::to_string(walk.error_offset) + ": " +
                             std::string(daqflow::wire::to_string(walk.status));
    throw nb::value_error(what.c_str());
  }
  std::vector<std::uint32_t> source(walk.count);
  std::vector<std::uint64_t> offset(walk.count), size(walk.count);
  for (std::size_t i = 0; i < walk.count; ++i) {
    source[i] = infos[i].source_id;
    offset[i] = infos[i].offset;
    size[i] = infos[i].size;
  }
  return {column(std::move(source)), column(std::move(offset)), column(std::move(size))};
}

}  // namespace

NB_MODULE(_native, m) {
  m.doc() = "daqflow's C++ readers (daqflow.open is the way in)";
  m.attr("version") = DAQFLOW_VERSION;

  nb::class_<Verification>(m, "Verification")
      .def_ro("problems", &Verification::problems)
      .def_ro("bad_records", &Verification::bad_records)
      .def_ro("records", &Verification::records)
      .def_ro("complete", &Verification::complete);

  nb::class_<DataFile>(m, "DataFile")
      .def(nb::init<const std::string&>(), nb::arg("path"))
      .def_prop_ro("path", [](const DataFile& f) { return f.reader().path(); })
      .def_prop_ro("format",
                   [](const DataFile& f) { return std::string(to_string(f.reader().format())); })
      .def_prop_ro("content",
                   [](const DataFile& f) { return content_name(f.reader().info().content); })
      .def_prop_ro("run", [](const DataFile& f) { return f.reader().info().run; })
      .def_prop_ro("writer", [](const DataFile& f) { return f.reader().info().writer; })
      .def_prop_ro("sequence", [](const DataFile& f) { return f.reader().info().sequence; })
      .def_prop_ro("lumi", [](const DataFile& f) { return f.reader().info().lumi; })
      .def_prop_ro("complete", [](const DataFile& f) { return f.reader().complete(); })
      .def_prop_ro("truncated", [](const DataFile& f) { return f.reader().truncated(); })
      .def_prop_ro("buffer", [](nb::handle self) { return buffer_of(self); })
      .def("records", &DataFile::records)
      .def("pieces", &DataFile::pieces)
      .def("verify", &DataFile::verify);

  m.def("split_fragments", &split_fragments, nb::arg("event"));
}
