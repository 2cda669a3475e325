#pragma once
// Helpers shared by the built-in applications: application names for error messages. Control
// path only.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::apps::detail {

// Completions taken per poll() call; every application polls into a fixed array of this size.
inline constexpr std::size_t kPollBatch = 64;

// Application ids by index (a copy: the configuration is only guaranteed during configure()).
[[nodiscard]] std::vector<std::string> application_ids(const runtime::ClusterConfig& cluster);

// Posts a copy of bytes (a control message no larger than the pool's buffers) to peer, in a
// buffer of pool; back_pressure when the pool has none free.
[[nodiscard]] transport::SendStatus send_copy(transport::Endpoint& endpoint, core::BufferPool& pool,
                                              transport::AppIndex peer, wire::MessageType type,
                                              std::uint64_t tag, std::span<const std::byte> bytes);

// "sink0" for a known index, else "application #7" (for error messages, not the data path).
[[nodiscard]] std::string peer_name(const std::vector<std::string>& ids, transport::AppIndex peer);

}  // namespace daqflow::apps::detail
