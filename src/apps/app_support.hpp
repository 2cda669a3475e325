#pragma once
// Helpers shared by the built-in applications: application names for error messages and the
// retirement of pools that peers may still reference. Control path only.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
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

// "sink0" for a known index, else "application #7" (for error messages, not the data path).
[[nodiscard]] std::string peer_name(const std::vector<std::string>& ids, transport::AppIndex peer);

// Frees a pool whose buffers have all come back; a pool still referenced (e.g. by a peer's
// inproc endpoint that has not yet dropped a received message) is kept for a later call, since
// freeing it would leave those references dangling.
void release_pool_if_idle(std::unique_ptr<core::BufferPool>& pool);
// For destructors: as above, but a pool still referenced is leaked on purpose, with an error
// log naming it, rather than unmapped under its users.
void retire_pool(std::unique_ptr<core::BufferPool>& pool);

}  // namespace daqflow::apps::detail
