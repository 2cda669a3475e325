#include "transport/detail/endpoint_common.hpp"

#include <string_view>

#include "daqflow/wire/crc32c.hpp"

namespace daqflow::transport::detail {

std::string endpoint_name(std::string_view transport, const AddressTable& table, AppIndex self) {
  return std::string(transport) + " endpoint of application " + peer_name(table, self);
}

std::string peer_name(const AddressTable& table, AppIndex peer) {
  if (peer < table.size()) return "'" + table[peer].id + "'";
  return "#" + std::to_string(peer) + ", which is not in the address table (" +
         std::to_string(table.size()) + " applications)";
}

Result<std::string> check_endpoint_options(std::string_view transport, const AddressTable& table,
                                           const EndpointOptions& options,
                                           bool needs_recv_buffers) {
  std::string name = endpoint_name(transport, table, options.self);
  if (options.self >= table.size()) return Error(ErrorCode::not_found, name);
  if (options.pipeline_depth == 0) return Error(name + ": pipeline_depth must be at least 1");
  if (needs_recv_buffers && options.recv_buffers == 0) {
    return Error(name + ": recv_buffers must be at least 1");
  }
  return name;
}

Result<void> check_connect(const std::string& name, const AddressTable& table, AppIndex peer,
                           bool closed) {
  if (closed) return Error(ErrorCode::conflict, name + " is closed");
  if (peer >= table.size()) {
    return Error(ErrorCode::not_found,
                 name + ": cannot connect to application " + peer_name(table, peer));
  }
  return ok();
}

Result<core::SocketAddress> peer_data_address(const std::string& name, const AddressTable& table,
                                              AppIndex peer) {
  const AppAddress& to = table[peer];
  if (to.data_port == 0) {
    return Error(name + ": cannot connect to '" + to.id + "' (context '" + to.context +
                 "'): it has no data port in the address table");
  }
  auto address = core::resolve(to.host, to.data_port);
  if (!address) return address.error().context(name + ": cannot connect to '" + to.id + "'");
  return address;
}

wire::MessageHeader data_header(const Message& message, AppIndex source, AppIndex destination,
                                std::uint64_t sequence, std::uint32_t payload_size,
                                bool payload_crc) {
  wire::MessageHeader h;
  h.type = message.type;
  h.flags = static_cast<std::uint16_t>(message.flags & ~wire::kFlagPayloadCrc);
  h.source = source;
  h.destination = destination;
  h.sequence = sequence;
  h.tag = message.tag;
  h.payload_size = payload_size;
  if (payload_crc) {
    h.flags |= wire::kFlagPayloadCrc;
    std::uint32_t crc = 0;
    for (const Segment& s : message.pieces()) {
      if (s.length > 0) crc = wire::crc32c(s.bytes(), crc);
    }
    h.crc32c = crc;
  }
  return h;
}

}  // namespace daqflow::transport::detail
