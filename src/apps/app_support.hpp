#pragma once
// Helpers shared by the built-in applications: application names for error messages, the size
// distribution parameter. Control path only.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/apps/sampler.hpp"
#include "daqflow/core/random.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/settings.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::apps {

// The transport's words, as every application speaks them.
using transport::AppIndex;
using transport::Completion;
using transport::SendStatus;

}  // namespace daqflow::apps

namespace daqflow::apps::detail {

// Application ids by index (a copy: the configuration is only guaranteed during configure()).
[[nodiscard]] std::vector<std::string> application_ids(const runtime::ClusterConfig& cluster);

// The id of the application at index (as results and messages name it): "sink0", or
// "application #7" for an index the cluster does not have. Not for the data path.
[[nodiscard]] std::string id_of(const std::vector<std::string>& ids, transport::AppIndex peer);

// Peers of one kind, for open_endpoint: "worker" and the workers' indexes.
struct Peers {
  std::string_view kind;
  std::span<const transport::AppIndex> indexes;
};

// The application's endpoint (AppContext::endpoint(options)), connected to every peer of `peers`;
// an error names what failed ("connecting to worker 'w3'").
[[nodiscard]] Result<transport::Endpoint*> open_endpoint(
    runtime::AppContext& ctx, std::initializer_list<Peers> peers,
    const transport::EndpointOptions* options = nullptr);

// The sampler's steady rates in an application's results: `per_s_key` (messages a second),
// mb_per_s and rate_seconds (what they were measured over); both rates 0 before two samples.
void put_rates(nlohmann::json& results, const ThroughputSampler& sampler,
               const std::string& per_s_key);

// A size distribution parameter: {dist, mean, sd, max}, bytes.
struct SizeSettings {
  std::string dist;
  double mean = 0;
  double sd = 0;
  std::uint32_t max = 0;
  // The distribution (dist is one the spec let through).
  [[nodiscard]] core::DistSpec distribution() const;
};

}  // namespace daqflow::apps::detail
