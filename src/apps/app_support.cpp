#include "app_support.hpp"

#include <algorithm>

#include "daqflow/core/log.hpp"
#include "daqflow/runtime/data_path.hpp"

namespace daqflow::apps::detail {

std::vector<std::string> application_ids(const runtime::ClusterConfig& cluster) {
  std::vector<std::string> ids;
  ids.reserve(cluster.applications.size());
  for (const auto& app : cluster.applications) ids.push_back(app.id);
  return ids;
}

transport::SendStatus send_copy(transport::Endpoint& endpoint, core::BufferPool& pool,
                                transport::AppIndex peer, wire::MessageType type, std::uint64_t tag,
                                std::span<const std::byte> bytes) {
  return runtime::send_copy(endpoint, pool, peer, type, tag, bytes);
}

std::string peer_name(const std::vector<std::string>& ids, transport::AppIndex peer) {
  if (peer < ids.size()) return ids[peer];
  return "application #" + std::to_string(peer);
}

}  // namespace daqflow::apps::detail
