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

core::DistSpec SizeSettings::distribution() const {
  core::DistSpec d;
  d.dist = *core::parse_dist(dist);  // one_of: known
  d.mean = mean;
  d.sd = sd;
  return d;
}

}  // namespace daqflow::apps::detail
