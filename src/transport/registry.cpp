// The transports built into this binary, looked up by name.

#include <array>
#include <string>

#include "daqflow/transport/fault.hpp"
#include "daqflow/transport/transport.hpp"
#include "factories.hpp"

namespace daqflow::transport {
namespace {

constexpr std::array<std::string_view, 2> kNames{"inproc", "tcp"};

}  // namespace

std::string_view to_string(SendStatus status) {
  switch (status) {
    case SendStatus::ok:
      return "ok";
    case SendStatus::back_pressure:
      return "back pressure";
    case SendStatus::not_connected:
      return "not connected";
    case SendStatus::closed:
      return "closed";
    case SendStatus::too_large:
      return "message too large";
    case SendStatus::invalid:
      return "invalid";
  }
  return "unknown send status";
}

std::span<const std::string_view> transport_names() {
  return kNames;
}

Result<std::unique_ptr<Transport>> make_transport(std::string_view name,
                                                  const AddressTable& addresses) {
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    if (addresses[i].index != i) {
      return Error("transport '" + std::string(name) + "': address table entry " +
                   std::to_string(i) + " ('" + addresses[i].id + "') has index " +
                   std::to_string(addresses[i].index));
    }
  }
  if (name == "inproc") return make_inproc_transport(addresses);
  if (name == "tcp") return make_tcp_transport(addresses);
  std::string known;
  for (const auto n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
  return Error("unknown transport '" + std::string(name) + "' (built in: " + known + ")");
}

FaultInjection* fault_injection(Endpoint& endpoint) {
  return dynamic_cast<FaultInjection*>(&endpoint);
}

}  // namespace daqflow::transport
