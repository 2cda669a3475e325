// The network input's parameters (`input: network` on a RU or the EVM) and its factory from the
// RU's validated parameters.

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "daqflow/apps/evb/network_input.hpp"
#include "daqflow/wire/fed.hpp"
#include "sources.hpp"

namespace daqflow::apps::evb {

std::vector<runtime::ParamSpec> network_input_params() {
  using runtime::ParamKind;
  using runtime::ParamSpec;
  std::vector<ParamSpec> specs;
  {
    ParamSpec p;
    p.name = "fed_port";
    p.kind = ParamKind::integer;
    p.help = "input: network: FED i listens on fed_port + i on the context's host (0: unset)";
    p.default_json = "0";
    p.min = 0;
    p.max = 65535;
    specs.push_back(std::move(p));
  }
  {
    ParamSpec p;
    p.name = "crc_check_every";
    p.kind = ParamKind::integer;
    p.help = "input: network: check the FED CRC of events n with n % N == 0 (0: never, 1: always)";
    p.default_json = "1";
    p.min = 0;
    p.max = 1e9;
    specs.push_back(std::move(p));
  }
  {
    ParamSpec p;
    p.name = "on_error";
    p.kind = ParamKind::string;
    p.help =
        "input: network: a bad fragment fails the run (fail) or marks its event corrupted (mark)";
    p.default_json = "\"fail\"";
    p.choices = {"fail", "mark"};
    specs.push_back(std::move(p));
  }
  {
    ParamSpec p;
    p.name = "fed_max_fragment_bytes";
    p.kind = ParamKind::integer;
    p.help = "input: network: largest fragment a FED may send (bytes); a larger one fails the run";
    p.default_json = "65536";
    p.min = static_cast<double>(wire::kFedMinFragmentSize);
    p.max = static_cast<double>(wire::kFedMaxFragmentSize);
    specs.push_back(std::move(p));
  }
  {
    ParamSpec p;
    p.name = "fed_buffer_mb";
    p.kind = ParamKind::integer;
    p.help =
        "input: network: receive buffer memory per FED (MiB); when full, TCP throttles the FED";
    p.default_json = "4";
    p.min = 1;
    p.max = 4096;
    specs.push_back(std::move(p));
  }
  return specs;
}

namespace {

Result<std::int64_t> integer(const nlohmann::json& p, const char* key, std::int64_t fallback,
                             std::int64_t lo, std::int64_t hi) {
  const auto it = p.find(key);
  if (it == p.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) {
    return Error(fmt::format("parameter '{}': expected an integer, got {}", key, it->dump()));
  }
  const auto v = it->get<std::int64_t>();
  if (v < lo || v > hi) {
    return Error(fmt::format("parameter '{}': {} is outside {}..{}", key, v, lo, hi));
  }
  return v;
}

}  // namespace

Result<std::unique_ptr<FragmentSource>> make_network_input(const nlohmann::json& ru_params,
                                                           std::uint32_t ru_index,
                                                           const std::string& host) {
  NetworkInputSettings s;
  s.host = host;
  auto feds = integer(ru_params, "feds", -1, 1, 4096);
  if (!feds) return feds.error();
  if (*feds < 0) return Error("parameter 'feds': missing");
  // As the emulator: the EVM's FEDs are 0.., the first RU's 100.., unless first_fed_id is set.
  auto first =
      integer(ru_params, "first_fed_id", std::int64_t{100} * ru_index, 0, wire::kFedMaxSourceId);
  if (!first) return first.error();
  if (*first + *feds - 1 > wire::kFedMaxSourceId) {
    return Error(
        fmt::format("parameter 'first_fed_id': FED ids {}..{} do not fit the 12-bit "
                    "source id (0..4095); set first_fed_id explicitly",
                    *first, *first + *feds - 1));
  }
  for (std::int64_t i = 0; i < *feds; ++i)
    s.fed_ids.push_back(static_cast<std::uint16_t>(*first + i));
  auto port = integer(ru_params, "fed_port", 0, 0, 65535);
  if (!port) return port.error();
  if (*port == 0) {
    return Error(
        "parameter 'fed_port': must be set for input: network (FED i listens on "
        "fed_port + i)");
  }
  s.port = static_cast<std::uint16_t>(*port);
  auto every = integer(ru_params, "crc_check_every", 1, 0, 1'000'000'000);
  if (!every) return every.error();
  s.crc_check_every = static_cast<std::uint32_t>(*every);
  if (const auto it = ru_params.find("on_error"); it != ru_params.end() && it->is_string()) {
    const auto& mode = it->get_ref<const std::string&>();
    if (mode == "mark") {
      s.on_error = OnFragmentError::mark;
    } else if (mode != "fail") {
      return Error("parameter 'on_error': '" + mode + "' is not one of: fail, mark");
    }
  }
  auto max_fragment = integer(ru_params, "fed_max_fragment_bytes", 65536, wire::kFedMinFragmentSize,
                              wire::kFedMaxFragmentSize);
  if (!max_fragment) return max_fragment.error();
  s.max_fragment_bytes = static_cast<std::size_t>(*max_fragment);
  auto buffer_mb = integer(ru_params, "fed_buffer_mb", 4, 1, 4096);
  if (!buffer_mb) return buffer_mb.error();
  s.buffer_bytes_per_fed = static_cast<std::size_t>(*buffer_mb) << 20;
  s.name = fmt::format("FED network input of RU #{}", ru_index);
  return make_network_input(s);
}

}  // namespace daqflow::apps::evb
