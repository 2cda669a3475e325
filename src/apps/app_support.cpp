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

std::string id_of(const std::vector<std::string>& ids, transport::AppIndex peer) {
  if (peer < ids.size()) return ids[peer];
  return "application #" + std::to_string(peer);
}

Result<transport::Endpoint*> open_endpoint(runtime::AppContext& ctx,
                                           std::initializer_list<Peers> peers,
                                           const transport::EndpointOptions* options) {
  auto endpoint = ctx.endpoint(options);
  if (!endpoint) return endpoint.error().context("endpoint");
  const auto& apps = ctx.cluster().applications;
  for (const Peers& group : peers) {
    for (const transport::AppIndex peer : group.indexes) {
      if (auto r = (*endpoint)->connect(peer); !r) {
        const std::string name = peer < apps.size() ? apps[peer].id : std::to_string(peer);
        return r.error().context("connecting to " + std::string(group.kind) + " '" + name + "'");
      }
    }
  }
  return *endpoint;
}

void put_rates(nlohmann::json& results, const ThroughputSampler& sampler,
               const std::string& per_s_key) {
  if (const auto steady = summarize(sampler.samples())) {
    results[per_s_key] = steady->messages_per_s;
    results["mb_per_s"] = steady->mb_s;
    results["rate_seconds"] = steady->seconds;
  } else {
    results[per_s_key] = 0.0;
    results["mb_per_s"] = 0.0;
  }
}

core::DistSpec SizeSettings::distribution() const {
  core::DistSpec d;
  d.dist = *core::parse_dist(dist);  // one_of: known
  d.mean = mean;
  d.sd = sd;
  return d;
}

}  // namespace daqflow::apps::detail
