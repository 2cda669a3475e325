#include "sim/platform.hpp"

#include <fmt/format.h>

#include <exception>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

namespace daqflow::sim {
namespace sg = simgrid::s4u;

Result<std::vector<sg::Host*>> build_platform(const PlatformSpec& spec, std::size_t contexts) {
  if (spec.kind == PlatformSpec::Kind::file) {
    try {
      sg::Engine::get_instance()->load_platform(spec.file);
    } catch (const std::exception& e) {
      return Error("platform file " + spec.file + ": " + e.what());
    }
    auto hosts = sg::Engine::get_instance()->get_all_hosts();
    if (hosts.empty()) return Error("platform file " + spec.file + " has no host");
    return hosts;
  }
  const std::size_t n = spec.hosts > 0 ? spec.hosts : std::max<std::size_t>(contexts, 1);
  if (spec.cores < 1) return Error("a simulated host needs at least one core");
  if (spec.link_bytes_s <= 0 || spec.core_flops <= 0) {
    return Error("link bandwidth and core speed must be positive");
  }
  // A star: each host's own link, split into its two directions, to one switch that never
  // blocks; applications of one host talk over its loopback.
  auto* zone = sg::create_star_zone("cluster");
  std::vector<sg::Host*> hosts;
  hosts.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string id = std::to_string(i);
    auto* host =
        zone->create_host("node" + id, spec.core_flops)->set_core_count(spec.cores)->seal();
    auto* link = zone->create_split_duplex_link("link" + id, spec.link_bytes_s)
                     ->set_latency(spec.link_latency_s)
                     ->seal();
    auto* loopback = zone->create_link("loopback" + id, spec.loopback_bytes_s)
                         ->set_latency(spec.loopback_latency_s)
                         ->set_sharing_policy(sg::Link::SharingPolicy::FATPIPE)
                         ->seal();
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                    {{link, sg::LinkInRoute::Direction::UP}}, true);
    zone->add_route(host->get_netpoint(), host->get_netpoint(), nullptr, nullptr,
                    {sg::LinkInRoute(loopback)}, false);
    hosts.push_back(host);
  }
  zone->seal();
  return hosts;
}

Result<std::vector<sg::Host*>> place_contexts(const PlatformSpec& spec,
                                              const runtime::ClusterConfig& cluster,
                                              const std::vector<sg::Host*>& hosts) {
  std::vector<sg::Host*> placed;
  for (std::size_t i = 0; i < cluster.contexts.size(); ++i) {
    const runtime::ContextConfig& c = cluster.contexts[i];
    if (spec.kind != PlatformSpec::Kind::file) {
      placed.push_back(hosts[i % hosts.size()]);
      continue;
    }
    sg::Host* host = sg::Host::by_name_or_null(c.host);
    if (host == nullptr) {
      return Error(
          fmt::format("{}:{}: context '{}' is on host '{}', which platform file {} "
                      "does not have",
                      cluster.file, c.location.line, c.name, c.host, spec.file));
    }
    placed.push_back(host);
  }
  return placed;
}

std::string describe(const PlatformSpec& spec, std::size_t hosts) {
  if (spec.kind == PlatformSpec::Kind::file) {
    return fmt::format("{} ({} hosts)", spec.file, hosts);
  }
  return fmt::format("star: {} hosts of {} cores at {:g} Gflop/s, links {:g} Gb/s and {:g} us",
                     hosts, spec.cores, spec.core_flops / 1e9, spec.link_bytes_s * 8 / 1e9,
                     spec.link_latency_s * 1e6);
}

}  // namespace daqflow::sim
