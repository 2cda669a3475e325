#pragma once
// What the ucx endpoints say to each other: one active-message id, whose AM header is the wire
// header (wire/header.hpp) and whose data is the payload. hello and bye are header-only.

#include <ucp/api/ucp.h>

#include <cstddef>

namespace daqflow::transport::ucx {

inline constexpr unsigned kAmId = 17;

// UCX's callbacks, forwarding to the endpoint or connection in their argument.
ucs_status_t active_message_callback(void* arg, const void* header, std::size_t header_length,
                                     void* data, std::size_t length,
                                     const ucp_am_recv_param_t* param);

}  // namespace daqflow::transport::ucx
