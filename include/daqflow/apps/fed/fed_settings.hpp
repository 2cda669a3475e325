#pragma once
// The FED parameters of a readout unit (a RU or the EVM): how many FEDs and their ids, where
// their fragments come from (`input`: the emulator, the network or a readout plugin), and each
// source's own parameters. One struct for every source, bound to the RU's parameters by
// FedSettings::spec(); each source takes what it needs from it, with the checks across
// parameters (errors name the key). Control path only.

#include <cstdint>
#include <optional>
#include <string>

#include "daqflow/runtime/settings.hpp"

namespace daqflow::apps::fed {

struct FedSettings {
  static const runtime::SettingsSpec<FedSettings>& spec();  // fed.settings.yaml

  std::uint32_t feds = 0;
  std::optional<std::int64_t> first_fed_id;  // none: 100 * the RU's position
  // The FED emulator (input.kind emulator; the EVM's trigger).
  struct FragmentSize {
    std::string dist;
    double mean = 0;
    double sd = 0;
    std::uint32_t min = 0;
    std::uint32_t max = 0;
  } fragment_size;
  std::uint64_t seed = 0;
  std::string payload;  // template or pattern
  // Where fragments come from, and that source's own keys.
  struct Input {
    std::string kind;        // emulator, network or plugin
    std::uint32_t port = 0;  // network: 0 unset
    std::string framing;     // network: ferol or frame
    std::uint32_t crc_check_every = 0;
    std::string on_error;  // fail or mark
    std::uint32_t max_fragment_bytes = 0;
    std::uint32_t buffer_mb = 0;
    std::string library;  // plugin
    std::string config;
  } input;

  // The first FED's id: first_fed_id, or 100 * position (the EVM's FEDs are 0.., the first
  // RU's 100..); an error names first_fed_id when the ids do not fit the 12-bit source id.
  [[nodiscard]] Result<std::uint16_t> first_id(std::uint32_t position) const;
};

// Every FED parameter; the network input's all have defaults, so that an emulator RU needs none
// of them.

}  // namespace daqflow::apps::fed
