#include "evb_config.hpp"

#include <algorithm>
#include <bit>

#include "apps/app_support.hpp"
#include "daqflow/apps/fed/emulator.hpp"
#include "daqflow/apps/output/output.hpp"
#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::evb {

using runtime::ParamSpec;

std::string Topology::name(transport::AppIndex index) const {
  return detail::id_of(ids, index);
}

int Topology::ru_position(transport::AppIndex index) const {
  const auto it = std::find(rus.begin(), rus.end(), index);
  return it == rus.end() ? -1 : static_cast<int>(it - rus.begin());
}

Result<Topology> resolve_topology(const runtime::AppContext& ctx) {
  const runtime::ClusterConfig& cluster = ctx.cluster();
  const runtime::ApplicationConfig& self = ctx.self();
  auto error = [&](const std::string& what) { return Error(self.location.str() + ": " + what); };
  // The application's own (current) parameters; the file's for the others.
  auto params_of = [&](const runtime::ApplicationConfig& app) {
    if (&app == &self) return runtime::ParamReader(ctx.params(), "");
    return runtime::ParamReader(app.params, runtime::application_named(app.id));
  };
  const runtime::ApplicationConfig* evm = &self;
  if (self.type != "evm") {
    runtime::ParamReader p = params_of(self);
    const auto evm_id = p.get<std::string>("evm");
    if (auto r = p.status(); !r) return r.error();
    evm = cluster.find_application(evm_id);
    if (evm == nullptr)
      return error("parameter 'evm': no application '" + evm_id + "' in " + cluster.file);
    if (evm->type != "evm") {
      return error("parameter 'evm': '" + evm_id + "' is a " + evm->type + ", not an evm");
    }
  }
  Topology t;
  t.ids = detail::application_ids(cluster);
  t.evm = evm->index;
  runtime::ParamReader evm_params = params_of(*evm);
  const auto ru_ids = evm_params.get<std::vector<std::string>>("rus");
  const auto bu_ids = evm_params.get<std::vector<std::string>>("bus");
  t.rus.push_back(evm->index);
  t.ru_feds.push_back(evm_params.get<std::uint32_t>("feds"));
  t.grant_lease_ns = evm_params.get<std::int64_t>("heartbeat_timeout_ms") * 1'000'000 / 2;
  t.numbering = evm_params.get<std::string>("event_numbers") == "cms" ? fed::EventNumbering::cms
                                                                      : fed::EventNumbering::index;
  t.resync_every = evm_params.get<std::uint64_t>("resync_every");
  if (auto r = evm_params.status(); !r) return r.error();

  // An application listed under `key`: there, of `type`, naming this EVM, and not in `listed`.
  auto member = [&](const std::string& id, const char* key, const char* type, const auto& listed,
                    const runtime::ApplicationConfig*& out) -> Result<void> {
    out = cluster.find_application(id);
    const std::string where = runtime::application_named(evm->id) + " parameter '" + key + "': ";
    if (out == nullptr) return error(where + "no application '" + id + "' in " + cluster.file);
    if (out->type != type)
      return error(where + "'" + id + "' is a " + out->type + ", not a " + type);
    const auto names = out->params.find("evm");
    if (names == out->params.end() || !names->is_string() || names->get<std::string>() != evm->id) {
      return error(where + "'" + id + "' does not name '" + evm->id + "' as its evm");
    }
    if (std::find(listed.begin(), listed.end(), out->index) != listed.end()) {
      return error(where + "'" + id + "' is listed twice");
    }
    return ok();
  };
  for (const auto& id : ru_ids) {
    const runtime::ApplicationConfig* ru = nullptr;
    if (auto r = member(id, "rus", "ru", t.rus, ru); !r) return r.error();
    runtime::ParamReader ru_params = params_of(*ru);
    t.rus.push_back(ru->index);
    t.ru_feds.push_back(ru_params.get<std::uint32_t>("feds"));
    if (auto r = ru_params.status(); !r) return r.error();
  }
  std::uint64_t windows = 0;
  for (const auto& id : bu_ids) {
    const runtime::ApplicationConfig* bu = nullptr;
    if (auto r = member(id, "bus", "bu", t.bus, bu); !r) return r.error();
    runtime::ParamReader bu_params = params_of(*bu);
    const auto window = bu_params.get<std::uint32_t>("blocks_in_flight");
    const auto events = bu_params.get<std::uint32_t>("events_per_request");
    const auto output = bu_params.get<nlohmann::json>("output");
    if (auto r = bu_params.status(); !r) return r.error();
    t.bus.push_back(bu->index);
    t.bu_windows.push_back(window);
    // Outputs that keep what they write: a block granted to such a BU is never given to
    // another (its files are salvaged to decide it).
    t.bu_durable.push_back(output::keeps_files(output));
    t.max_block_events = std::max(t.max_block_events, events);
    windows += window;
  }
  if (t.bus.empty())
    return error(runtime::application_named(evm->id) + " parameter 'bus': no BU listed");
  if (self.type == "ru" && t.ru_position(self.index) < 0) {
    return error("'" + evm->id + "' does not list '" + self.id + "' in its rus");
  }
  if (self.type == "bu" && std::find(t.bus.begin(), t.bus.end(), self.index) == t.bus.end()) {
    return error("'" + evm->id + "' does not list '" + self.id + "' in its bus");
  }
  t.max_block_events = std::min(t.max_block_events, wire::kMaxEventsPerBlock);
  // Room for every BU's window several times over: acks and new assigns cross on the way.
  t.evm_block_capacity = std::bit_ceil(std::max<std::uint64_t>(64, 4 * windows));
  t.ru_block_capacity = 2 * t.evm_block_capacity;
  // One block ready for every BU's next request: more is memory written long before it is sent,
  // out of the cache by then.
  t.lookahead_events = t.bus.size() * t.max_block_events;
  return t;
}

}  // namespace daqflow::apps::evb
