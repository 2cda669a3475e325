#pragma once
// Conversion between daqflow's data file formats (`daqflow convert`): .dqf event files, HDF5
// event files (.h5) and CMS FRD raw files (.raw). Every record's bytes, id, flags and CRC-32C
// carry over, so a file converted and converted back holds the same events byte for byte; what
// a format has no place for takes its neutral value (a .dqf record's luminosity section is its
// sidecar's, 0 where it has none; an FRD event's pieces are 1 and its id is the low 32 bits of the
// event id, as the FRD writer numbers events). Control path.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "daqflow/apps/output/event_file.hpp"
#include "daqflow/apps/output/hdf5_file.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::apps::output {

enum class DataFormat : std::uint8_t { dqf, hdf5, frd };

// "dqf", "hdf5", "frd"; parse_data_format() takes the same names.
[[nodiscard]] std::string_view to_string(DataFormat format);
[[nodiscard]] Result<DataFormat> parse_data_format(std::string_view name);
// The format a file name says (.dqf, .h5, .raw); an error for any other, and for a .part file
// (being written, or its writer died: salvage it first).
[[nodiscard]] Result<DataFormat> format_of(const std::string& path);

// What a file says of itself, whatever its format.
struct DataFileInfo {
  DataFormat format = DataFormat::dqf;
  Hdf5FileInfo info;  // content, run, writer, sequence, section (those the format has)
};

// Reads a file record by record, each checked against its CRC-32C (a mismatch is an error
// naming the record), calling on_record with the record (its offset unset) and its bytes.
[[nodiscard]] Result<DataFileInfo> read_data_file(
    const std::string& path,
    const std::function<Result<void>(const Hdf5Record&, std::span<const std::byte>)>& on_record);

// Writes `path`'s records as a file of format `to` in out_dir, named as the input with the
// format's suffix; returns its path. A .dqf file gets its sidecar; the result is written under
// a temporary name and renamed when complete, and an existing file is refused.
[[nodiscard]] Result<std::string> convert_data_file(const std::string& path, DataFormat to,
                                                    const std::string& out_dir,
                                                    const Hdf5WriteOptions& hdf5 = {});

}  // namespace daqflow::apps::output
