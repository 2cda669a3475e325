#pragma once
// The output kinds behind output::make_output (include/daqflow/apps/output/output.hpp), one factory
// per kind. make_output (output.cpp) dispatches on the `kind` key of a BU's `output`
// parameter and calls one of these. Control path only.

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>

#include "daqflow/apps/output/output.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::apps::output {

// {kind: discard}: counts events and bytes and gives every batch straight back
// (discard_output.cpp).
[[nodiscard]] Result<std::unique_ptr<EventOutput>> make_discard_output(
    const OutputContext& context);

// {kind: file, dir, max_file_mb, max_file_events, max_total_mb}: files of events with a JSON
// sidecar each, written on a thread of the output's own (file_output.cpp).
[[nodiscard]] Result<std::unique_ptr<EventOutput>> make_file_output(const nlohmann::json& params,
                                                                    const OutputContext& context);

// {kind: hdf5, dir, max_file_mb, max_file_events, max_total_mb, compression,
// compression_level}: HDF5 files of the same records, written on a thread of the output's own
// (hdf5_output.cpp; the layout: daqflow/apps/output/hdf5_file.hpp).
[[nodiscard]] Result<std::unique_ptr<EventOutput>> make_hdf5_output(const nlohmann::json& params,
                                                                    const OutputContext& context);
// A finished HDF5 file's events and bytes of data.
[[nodiscard]] Result<std::pair<std::uint64_t, std::uint64_t>> hdf5_file_counts(
    const std::string& path);

// {kind: frd, dir, events_per_file}: CMS FRD files per luminosity section in the HLT's run
// directory layout (frd_output.cpp).
[[nodiscard]] Result<std::unique_ptr<EventOutput>> make_frd_output(const nlohmann::json& params,
                                                                   const OutputContext& context);

// {kind: farm, sfc: ID}: every built event goes to the SFC of the filter farm, over the BU's
// own endpoint; a batch is done once the SFC has taken all its events (farm_output.cpp).
[[nodiscard]] Result<std::unique_ptr<EventOutput>> make_farm_output(const OutputContext& context);

}  // namespace daqflow::apps::output
