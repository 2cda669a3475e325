// The network input made from a RU's FED settings (`input: {kind: network}` on a RU or the EVM).

#include <fmt/format.h>

#include "daqflow/apps/fed/network_input.hpp"
#include "sources.hpp"

namespace daqflow::apps::fed {

Result<std::unique_ptr<FragmentSource>> make_network_input(const FedSettings& fed,
                                                           std::uint32_t ru_index,
                                                           const std::string& host,
                                                           EventNumbering numbering) {
  NetworkInputSettings s;
  s.host = host;
  s.numbering = numbering;
  s.crc_check_every = fed.input.crc_check_every;
  s.on_error = fed.input.on_error == "mark" ? OnFragmentError::mark : OnFragmentError::fail;
  s.framing = fed.input.framing == "frame" ? FedFraming::frame : FedFraming::ferol;
  s.max_fragment_bytes = fed.input.max_fragment_bytes;
  s.buffer_bytes_per_fed = std::size_t{fed.input.buffer_mb} << 20;
  // As the emulator: the EVM's FEDs are 0.., the first RU's 100.., unless first_fed_id is set.
  auto first = fed.first_id(ru_index);
  if (!first) return first.error();
  for (std::uint32_t i = 0; i < fed.feds; ++i) {
    s.fed_ids.push_back(static_cast<std::uint16_t>(*first + i));
  }
  if (fed.input.port == 0) {
    return runtime::param_error("input.port",
                                "must be set for input kind network (FED i listens on port + i)");
  }
  s.port = static_cast<std::uint16_t>(fed.input.port);
  s.name = fmt::format("FED network input of RU #{}", ru_index);
  return make_network_input(s);
}

}  // namespace daqflow::apps::fed
