#pragma once
// What every endpoint does alike, written once: how it names itself and its peers in errors
// (applications by id, never by index), the checks of create_endpoint() and connect(), the
// address of a peer's data port, and the header of a data message.

#include <cstdint>
#include <string>
#include <string_view>

#include "daqflow/core/net.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/transport/address.hpp"
#include "daqflow/transport/transport.hpp"
#include "daqflow/wire/header.hpp"

namespace daqflow::transport::detail {

// "tcp endpoint of application 'ru1'".
[[nodiscard]] std::string endpoint_name(std::string_view transport, const AddressTable& table,
                                        AppIndex self);

// "'ru1'"; for an index the table lacks, "application #7, which is not in the address table
// (5 applications)".
[[nodiscard]] std::string peer_name(const AddressTable& table, AppIndex peer);

// What every create_endpoint() checks: the application is in the table and the options can
// work (pipeline_depth and, when needs_recv_buffers, recv_buffers at least 1). Returns the
// endpoint's name for the messages that follow.
[[nodiscard]] Result<std::string> check_endpoint_options(std::string_view transport,
                                                         const AddressTable& table,
                                                         const EndpointOptions& options,
                                                         bool needs_recv_buffers = true);

// What every connect() checks first: the endpoint is open and the peer is in the table.
[[nodiscard]] Result<void> check_connect(const std::string& name, const AddressTable& table,
                                         AppIndex peer, bool closed);

// The peer's data address, for the transports that dial one (tcp, ucx, ofi); the error names
// the peer and its context when it has no data port.
[[nodiscard]] Result<core::SocketAddress> peer_data_address(const std::string& name,
                                                            const AddressTable& table,
                                                            AppIndex peer);

// The header of a data message: its type, flags (the CRC flag set by payload_crc alone),
// source, destination, sequence, tag and size, and the CRC32C of its segments when payload_crc.
[[nodiscard]] wire::MessageHeader data_header(const Message& message, AppIndex source,
                                              AppIndex destination, std::uint64_t sequence,
                                              std::uint32_t payload_size, bool payload_crc);

}  // namespace daqflow::transport::detail
