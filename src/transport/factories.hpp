#pragma once
// The built-in transports, for the registry.

#include <memory>

#include "daqflow/transport/transport.hpp"

namespace daqflow::transport {

[[nodiscard]] std::unique_ptr<Transport> make_inproc_transport(const AddressTable& addresses);
[[nodiscard]] std::unique_ptr<Transport> make_tcp_transport(const AddressTable& addresses);

}  // namespace daqflow::transport
