#pragma once
// The fragment sources behind a RU's `input` parameter (include/daqflow/apps/fed/
// fragment_source.hpp): the FED emulator (`input: emulator`) and FED streams received over TCP
// (`input: network`). Both are made at Configure from the RU's validated parameters. Control
// path only.

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "daqflow/apps/fed/event_numbers.hpp"
#include "daqflow/apps/fed/fragment_source.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/runtime/params.hpp"

namespace daqflow::apps::evb {

// The FED emulator (emulator.cpp). ru_params are the RU's (or EVM's) parameters: feds,
// first_fed_id, fragment_size {dist, mean, sd, min, max}, seed; ru_index is the RU's position in
// the builder (the EVM is 0, then the EVM's `rus` in order), used for the default first_fed_id
// and to derive distinct per-FED seeds.
// numbering and resync_every: the builder's (the EVM's event_numbers and resync_every).
[[nodiscard]] Result<std::unique_ptr<FragmentSource>> make_emulator(const nlohmann::json& ru_params,
                                                                    std::uint32_t ru_index,
                                                                    EventNumbering numbering,
                                                                    std::uint64_t resync_every);

// FED streams over TCP, one connection per FED (network_input.cpp). host is the address to
// listen on (the RU's context host).
[[nodiscard]] Result<std::unique_ptr<FragmentSource>> make_network_input(
    const nlohmann::json& ru_params, std::uint32_t ru_index, const std::string& host,
    EventNumbering numbering);

// The network input's parameters, appended to the RU's and the EVM's (network_input_params.cpp):
// fed_port, crc_check_every, on_error, fed_max_fragment_bytes, fed_buffer_mb. All have defaults,
// so that an emulator RU needs none of them.
[[nodiscard]] std::vector<runtime::ParamSpec> network_input_params();

}  // namespace daqflow::apps::evb
