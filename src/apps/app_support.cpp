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

std::string peer_name(const std::vector<std::string>& ids, transport::AppIndex peer) {
  if (peer < ids.size()) return ids[peer];
  return "application #" + std::to_string(peer);
}

}  // namespace daqflow::apps::detail
