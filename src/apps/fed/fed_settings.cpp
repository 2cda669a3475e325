#include "daqflow/apps/fed/fed_settings.hpp"

#include <fmt/format.h>

#include "daqflow/apps/fed/emulator.hpp"
#include "daqflow/wire/fed.hpp"

namespace daqflow::apps::fed {

Result<std::uint16_t> FedSettings::first_id(std::uint32_t position) const {
  const std::int64_t first = first_fed_id.value_or(std::int64_t{100} * position);
  if (first < 0 || first + feds - 1 > wire::kFedMaxSourceId) {
    return runtime::param_error(
        "first_fed_id", fmt::format("FED ids {}..{} do not fit the 12-bit source id (0..4095); "
                                    "set first_fed_id explicitly",
                                    first, first + feds - 1));
  }
  return static_cast<std::uint16_t>(first);
}

}  // namespace daqflow::apps::fed
