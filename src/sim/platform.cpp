#include "sim/platform.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

namespace daqflow::sim {
namespace sg = simgrid::s4u;

namespace {

// The links of a leaf switch to the spines: its host links over the oversubscription, as many to
// each spine.
std::size_t links_per_spine(const PlatformSpec& spec) {
  const double uplinks = static_cast<double>(spec.leaf_hosts) / spec.oversubscription;
  return std::max<std::size_t>(
      1, static_cast<std::size_t>(std::ceil(uplinks / static_cast<double>(spec.spines) - 1e-9)));
}

std::size_t leaves(const PlatformSpec& spec, std::size_t hosts) {
  return (hosts + spec.leaf_hosts - 1) / spec.leaf_hosts;
}

// SimGrid's fat tree of two levels: hosts on leaf switches (one link each), every leaf linked to
// every spine. Routes are static (SimGrid picks one of the parallel paths by destination), so
// flows may collide on an uplink as they do under static routing.
Result<std::vector<sg::Host*>> build_fat_tree(const PlatformSpec& spec, std::size_t n) {
  if (spec.leaf_hosts < 1 || spec.spines < 1) {
    return Error("a fat tree needs at least one host per leaf and one spine");
  }
  if (spec.oversubscription < 1) {
    return Error("the oversubscription of a fat tree's leaves is at least 1 (non-blocking)");
  }
  const auto leaf_count = static_cast<unsigned>(leaves(spec, n));
  const sg::FatTreeParams params(2, {static_cast<unsigned>(spec.leaf_hosts), leaf_count},
                                 {1, static_cast<unsigned>(spec.spines)},
                                 {1, static_cast<unsigned>(links_per_spine(spec))});
  std::vector<sg::Host*> hosts(static_cast<std::size_t>(leaf_count) * spec.leaf_hosts, nullptr);
  const auto host = [&](sg::NetZone* zone, const std::vector<unsigned long>& /*coord*/,
                        unsigned long id) {
    sg::Host* h = zone->create_host("node" + std::to_string(id), spec.core_flops)
                      ->set_core_count(spec.cores)
                      ->seal();
    hosts.at(id) = h;
    return std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*>(
        h->get_netpoint(), nullptr);
  };
  const auto loopback = [&](sg::NetZone* zone, const std::vector<unsigned long>& /*coord*/,
                            unsigned long id) {
    return zone->create_link("loopback" + std::to_string(id), spec.loopback_bytes_s)
        ->set_latency(spec.loopback_latency_s)
        ->set_sharing_policy(sg::Link::SharingPolicy::FATPIPE)
        ->seal();
  };
  try {
    auto* zone = sg::create_fatTree_zone(
        "cluster", nullptr, params, sg::ClusterCallbacks(host, loopback, {}), spec.link_bytes_s,
        spec.link_latency_s, sg::Link::SharingPolicy::SPLITDUPLEX);
    zone->seal();
  } catch (const std::exception& e) {
    return Error(std::string("fat tree: ") + e.what());
  }
  return hosts;
}

}  // namespace

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
  if (spec.kind == PlatformSpec::Kind::fat_tree) return build_fat_tree(spec, n);
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
  const std::string machines = fmt::format(
      "{} hosts of {} cores at {:g} Gflop/s, links {:g} Gb/s and {:g} us", hosts, spec.cores,
      spec.core_flops / 1e9, spec.link_bytes_s * 8 / 1e9, spec.link_latency_s * 1e6);
  if (spec.kind == PlatformSpec::Kind::star) return "star: " + machines;
  const std::size_t up = spec.spines * links_per_spine(spec);
  return fmt::format(
      "fat tree: {}; {} leaves of {} hosts, {} spines, {} uplinks per leaf "
      "(oversubscription {:g})",
      machines, leaves(spec, hosts), spec.leaf_hosts, spec.spines, up,
      static_cast<double>(spec.leaf_hosts) / static_cast<double>(up));
}

}  // namespace daqflow::sim
