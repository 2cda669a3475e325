// The network input's parameters (`input: network` on a RU or the EVM) and its factory from the
// RU's validated parameters.

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "daqflow/apps/fed/network_input.hpp"
#include "daqflow/wire/fed.hpp"
#include "sources.hpp"

namespace daqflow::apps::evb {

std::vector<runtime::ParamSpec> network_input_params() {
  using runtime::ParamSpec;
  return {
      ParamSpec::integer(
          "fed_port",
          "input: network: FED i listens on fed_port + i on the context's host (0: unset)")
          .default_value(0)
          .range(0, 65535),
      ParamSpec::integer(
          "crc_check_every",
          "input: network: check the FED CRC of events n with n % N == 0 (0: never, 1: always)")
          .default_value(1)
          .range(0, 1e9),
      ParamSpec::string("fed_framing",
                        "input: network: fragments arrive in CMS FEROL blocks (ferol) or each "
                        "behind one 16-byte frame header (frame)")
          .default_value("ferol")
          .one_of({"ferol", "frame"}),
      ParamSpec::string(
          "on_error",
          "input: network: a bad fragment fails the run (fail) or marks its event corrupted (mark)")
          .default_value("fail")
          .one_of({"fail", "mark"}),
      ParamSpec::integer(
          "fed_max_fragment_bytes",
          "input: network: largest fragment a FED may send (bytes); a larger one fails the run")
          .default_value(65536)
          .range(wire::kFedMinFragmentSize, wire::kFedMaxFragmentSize),
      ParamSpec::integer(
          "fed_buffer_mb",
          "input: network: receive buffer memory per FED (MiB); when full, TCP throttles the FED")
          .default_value(4)
          .range(1, 4096),
  };
}

// The parameters were checked against their specs (kinds, bounds, defaults); what is left are
// the checks across parameters.
Result<std::unique_ptr<FragmentSource>> make_network_input(const nlohmann::json& ru_params,
                                                           std::uint32_t ru_index,
                                                           const std::string& host,
                                                           EventNumbering numbering) {
  NetworkInputSettings s;
  s.host = host;
  s.numbering = numbering;
  runtime::ParamReader p(ru_params, "FED network input");
  const auto feds = p.get<std::uint32_t>("feds");
  // As the emulator: the EVM's FEDs are 0.., the first RU's 100.., unless first_fed_id is set.
  const auto first =
      p.get<std::optional<std::int64_t>>("first_fed_id").value_or(std::int64_t{100} * ru_index);
  const auto port = p.get<std::uint32_t>("fed_port");
  s.crc_check_every = p.get<std::uint32_t>("crc_check_every");
  s.on_error =
      p.get<std::string>("on_error") == "mark" ? OnFragmentError::mark : OnFragmentError::fail;
  s.framing = p.get<std::string>("fed_framing") == "frame" ? FedFraming::frame : FedFraming::ferol;
  s.max_fragment_bytes = p.get<std::uint32_t>("fed_max_fragment_bytes");
  s.buffer_bytes_per_fed = std::size_t{p.get<std::uint32_t>("fed_buffer_mb")} << 20;
  if (auto r = p.status(); !r) return r.error();
  if (first + feds - 1 > wire::kFedMaxSourceId) {
    return p.error("first_fed_id", fmt::format("FED ids {}..{} do not fit the 12-bit source id "
                                               "(0..4095); set first_fed_id explicitly",
                                               first, first + feds - 1));
  }
  for (std::uint32_t i = 0; i < feds; ++i) {
    s.fed_ids.push_back(static_cast<std::uint16_t>(first + i));
  }
  if (port == 0) {
    return p.error("fed_port", "must be set for input: network (FED i listens on fed_port + i)");
  }
  s.port = static_cast<std::uint16_t>(port);
  s.name = fmt::format("FED network input of RU #{}", ru_index);
  return make_network_input(s);
}

}  // namespace daqflow::apps::evb
