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

runtime::SettingsSpec<SizeSettings> size_spec(double default_bytes, double largest,
                                              std::string_view what) {
  using runtime::ParamSpec;
  return runtime::SettingsSpec<SizeSettings>()
      .bind(ParamSpec::string("dist", "fixed, uniform, exponential or lognormal")
                .default_value("fixed")
                .one_of({"fixed", "uniform", "exponential", "lognormal"}),
            &SizeSettings::dist)
      .bind(ParamSpec::number("mean", "mean size, bytes")
                .default_value(default_bytes)
                .range(8, largest),
            &SizeSettings::mean)
      .bind(ParamSpec::number("sd", "standard deviation, bytes").default_value(0).range(0, largest),
            &SizeSettings::sd)
      .bind(ParamSpec::integer("max", "largest " + std::string(what) + ", bytes")
                .default_value(static_cast<std::int64_t>(default_bytes))
                .range(8, largest),
            &SizeSettings::max);
}

}  // namespace daqflow::apps::detail
