#pragma once
// The fragment sources behind a RU's `input` parameter (include/daqflow/apps/fed/
// fragment_source.hpp): the FED emulator (`input: {kind: emulator}`), FED streams received over
// TCP (`{kind: network}`) and readout plugins (`{kind: plugin}`). Each is made at Configure from
// the RU's validated parameters. Control path only.

#include <cstdint>
#include <memory>
#include <string>

#include "daqflow/apps/fed/event_numbers.hpp"
#include "daqflow/apps/fed/fed_settings.hpp"
#include "daqflow/apps/fed/fragment_source.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::apps::fed {

// The FED emulator (emulator.cpp) from the RU's (or EVM's) FED settings; ru_index is the RU's
// position in the builder (the EVM is 0, then the EVM's `rus` in order), used for the default
// first_fed_id and to derive distinct per-FED seeds. numbering and resync_every: the builder's
// (the EVM's event_numbers and resync_every).
[[nodiscard]] Result<std::unique_ptr<FragmentSource>> make_emulator(const FedSettings& fed,
                                                                    std::uint32_t ru_index,
                                                                    EventNumbering numbering,
                                                                    std::uint64_t resync_every);

// FED streams over TCP, one connection per FED (network_input_params.cpp). host is the address
// to listen on (the RU's context host).
[[nodiscard]] Result<std::unique_ptr<FragmentSource>> make_network_input(const FedSettings& fed,
                                                                         std::uint32_t ru_index,
                                                                         const std::string& host,
                                                                         EventNumbering numbering);

// A readout plugin's fragments (plugin_input.cpp): the library of input.library, given
// input.config and the FED ids; app names the application to the plugin.
[[nodiscard]] Result<std::unique_ptr<FragmentSource>> make_plugin_input(const FedSettings& fed,
                                                                        std::uint32_t ru_index,
                                                                        const std::string& app,
                                                                        EventNumbering numbering,
                                                                        std::uint64_t resync_every);

}  // namespace daqflow::apps::fed
