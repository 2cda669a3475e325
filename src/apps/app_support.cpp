#include "app_support.hpp"

#include <algorithm>

#include "daqflow/core/log.hpp"

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
  core::Buffer b = pool.acquire();
  if (!b) return transport::SendStatus::back_pressure;
  std::copy(bytes.begin(), bytes.end(), b.data());
  transport::Message m;
  m.type = type;
  m.tag = tag;
  m.add(std::move(b), 0, static_cast<std::uint32_t>(bytes.size()));
  const transport::SendStatus s = endpoint.post_send(peer, m);
  m.clear();
  return s;
}

std::string peer_name(const std::vector<std::string>& ids, transport::AppIndex peer) {
  if (peer < ids.size()) return ids[peer];
  return "application #" + std::to_string(peer);
}

}  // namespace daqflow::apps::detail
