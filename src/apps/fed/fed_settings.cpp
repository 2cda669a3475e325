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

const runtime::SettingsSpec<FedSettings>& fed_settings_spec() {
  using runtime::ParamSpec;
  using S = FedSettings;
  using Size = FedSettings::FragmentSize;
  static const auto size =
      runtime::SettingsSpec<Size>()
          .bind(ParamSpec::string("dist", "fixed, uniform or lognormal")
                    .default_value("lognormal")
                    .one_of({"fixed", "uniform", "lognormal"}),
                &Size::dist)
          .bind(ParamSpec::number("mean", "mean fragment size, bytes")
                    .default_value(2048)
                    .range(16, kMaxEmulatedFragmentSize),
                &Size::mean)
          .bind(ParamSpec::number("sd", "standard deviation, bytes")
                    .default_value(1024)
                    .range(0, kMaxEmulatedFragmentSize),
                &Size::sd)
          .bind(ParamSpec::integer("min", "smallest fragment, bytes (rounded up to 8)")
                    .default_value(64)
                    .range(16, kMaxEmulatedFragmentSize),
                &Size::min)
          .bind(ParamSpec::integer("max", "largest fragment, bytes (rounded down to 8)")
                    .default_value(65536)
                    .range(16, kMaxEmulatedFragmentSize),
                &Size::max);
  static const auto spec =
      runtime::SettingsSpec<S>()
          .bind(ParamSpec::integer("feds", "FEDs read by this RU (one fragment each per event)")
                    .default_value(8)
                    .range(1, kMaxFedsPerRu),
                &S::feds)
          .bind(ParamSpec::integer("first_fed_id",
                                   "FED id of the first FED; null: 100 * the RU's position (EVM "
                                   "0, then the EVM's rus)")
                    .default_json_text("null")
                    .range(0, 4095),
                &S::first_fed_id)
          .bind("fragment_size", "FED emulator: fragment size distribution (bytes, whole fragment)",
                size, &S::fragment_size)
          .bind(ParamSpec::integer("seed", "FED emulator: seed of the fragment sizes and payloads")
                    .default_value(1)
                    .at_least(0),
                &S::seed)
          .bind(ParamSpec::string("payload",
                                  "FED emulator: template (one pattern per FED, fast) or pattern "
                                  "(differs per event)")
                    .default_value("template")
                    .one_of({"template", "pattern"}),
                &S::payload)
          .bind(ParamSpec::string("input", "where fragments come from: emulator or network")
                    .default_value("emulator")
                    .one_of({"emulator", "network"}),
                &S::input)
          .bind(ParamSpec::integer("fed_port",
                                   "input: network: FED i listens on fed_port + i on the "
                                   "context's host (0: unset)")
                    .default_value(0)
                    .range(0, 65535),
                &S::fed_port)
          .bind(ParamSpec::integer("crc_check_every",
                                   "input: network: check the FED CRC of events n with n % N == 0 "
                                   "(0: never, 1: always)")
                    .default_value(1)
                    .range(0, 1e9),
                &S::crc_check_every)
          .bind(ParamSpec::string("fed_framing",
                                  "input: network: fragments arrive in CMS FEROL blocks (ferol) "
                                  "or each behind one 16-byte frame header (frame)")
                    .default_value("ferol")
                    .one_of({"ferol", "frame"}),
                &S::fed_framing)
          .bind(ParamSpec::string("on_error",
                                  "input: network: a bad fragment fails the run (fail) or marks "
                                  "its event corrupted (mark)")
                    .default_value("fail")
                    .one_of({"fail", "mark"}),
                &S::on_error)
          .bind(ParamSpec::integer("fed_max_fragment_bytes",
                                   "input: network: largest fragment a FED may send (bytes); a "
                                   "larger one fails the run")
                    .default_value(65536)
                    .range(wire::kFedMinFragmentSize, wire::kFedMaxFragmentSize),
                &S::fed_max_fragment_bytes)
          .bind(ParamSpec::integer("fed_buffer_mb",
                                   "input: network: receive buffer memory per FED (MiB); when "
                                   "full, TCP throttles the FED")
                    .default_value(4)
                    .range(1, 4096),
                &S::fed_buffer_mb);
  return spec;
}

}  // namespace daqflow::apps::fed
