#include "evb_config.hpp"

#include <algorithm>
#include <bit>

#include "apps/app_support.hpp"
#include "daqflow/apps/fed/emulator.hpp"
#include "daqflow/apps/output/output.hpp"
#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::evb {

using runtime::ParamSpec;

runtime::SettingsSpec<ReadoutParams> readout_params_spec() {
  using P = ReadoutParams;
  return runtime::SettingsSpec<P>()
      .include(fed::fed_settings_spec(), &P::fed)
      .bind(ParamSpec::integer("chunk_size",
                               "bytes per chunk of super-fragment memory (a multiple of 64)")
                .default_value(4194304)
                .range(4096, 2147483648.0),
            &P::chunk_size)
      .bind(ParamSpec::integer("chunks", "chunks of super-fragment memory")
                .default_value(32)
                .range(2, 65536),
            &P::chunks);
}

const runtime::SettingsSpec<RuSettings>& ru_settings_spec() {
  static const auto spec =
      runtime::SettingsSpec<RuSettings>()
          .bind(ParamSpec::app_ref("evm", "the EVM of this builder"), &RuSettings::evm)
          .include(readout_params_spec(), &RuSettings::readout);
  return spec;
}

const runtime::SettingsSpec<EvmSettings>& evm_settings_spec() {
  using S = EvmSettings;
  static const auto spec =
      runtime::SettingsSpec<S>()
          .bind(ParamSpec::app_ref_list("rus", "the RUs of this builder (the EVM is one more)")
                    .default_json_text("[]"),
                &S::rus)
          .bind(ParamSpec::app_ref_list("bus", "the BUs of this builder"), &S::bus)
          .bind(ParamSpec::number("trigger_rate_hz", "trigger rate limit; 0: as fast as possible")
                    .default_value(0)
                    .at_least(0),
                &S::trigger_rate_hz)
          .bind(ParamSpec::integer("heartbeat_timeout_ms",
                                   "a BU silent for this long is lost; its blocks go to the others")
                    .default_value(2000)
                    .range(10, 3600000),
                &S::heartbeat_timeout_ms)
          .bind(ParamSpec::string("event_numbers",
                                  "the FEDs' L1 ids: index (event k carries k mod 2^24) or cms "
                                  "(from 1, wrapping at 2^24, a resync restarting at 1), for every "
                                  "RU of the builder")
                    .default_value("index")
                    .one_of({"index", "cms"}),
                &S::event_numbers)
          .bind(ParamSpec::number("lumi_section_s",
                                  "length of a luminosity section, s (CMS: 2^18 LHC orbits, 23.31 "
                                  "s); the sections of a run count from 1 at Enable")
                    .default_value(23.311)
                    .range(0.001, 1e6),
                &S::lumi_section_s)
          .bind(ParamSpec::integer("lumi_section_events",
                                   "a luminosity section every this many events instead (tests); "
                                   "0: by time")
                    .default_value(0)
                    .at_least(0),
                &S::lumi_section_events)
          .bind(ParamSpec::integer("resync_every",
                                   "event_numbers cms, FED emulators: a resync after this many "
                                   "events (the next is event 1 again); 0: never")
                    .default_value(0)
                    .at_least(0),
                &S::resync_every)
          .include(readout_params_spec(), &S::readout);
  return spec;
}

const runtime::SettingsSpec<BuSettings>& bu_settings_spec() {
  using S = BuSettings;
  static const auto spec =
      runtime::SettingsSpec<S>()
          .bind(ParamSpec::app_ref("evm", "the EVM of this builder"), &S::evm)
          .bind(ParamSpec::integer("events_per_request", "events per block asked of the EVM")
                    .default_value(32)
                    .range(1, wire::kMaxEventsPerBlock),
                &S::events_per_request)
          .bind(ParamSpec::integer("blocks_in_flight", "blocks requested or being built at once")
                    .default_value(4)
                    .range(1, 256),
                &S::blocks_in_flight)
          .bind(ParamSpec::integer("timeout_ms",
                                   "wait this long for a RU's part of a block, then its events are "
                                   "incomplete")
                    .default_value(2000)
                    .range(1, 3600000),
                &S::timeout_ms)
          .bind(ParamSpec::boolean("check_crc", "check every FED fragment's CRC")
                    .default_value(false),
                &S::check_crc)
          .bind(ParamSpec::string("on_incomplete",
                                  "incomplete events: write (flagged) or fail the run")
                    .default_value("write")
                    .one_of({"write", "fail"}),
                &S::on_incomplete)
          .bind(ParamSpec::integer("heartbeat_ms", "heartbeat period towards the EVM")
                    .default_value(200)
                    .range(1, 600000),
                &S::heartbeat_ms)
          .bind(ParamSpec::integer("evm_redial_ms",
                                   "after the link to the EVM failed, dial it again this long, "
                                   "then fail")
                    .default_value(10000)
                    .range(1, 3600000),
                &S::evm_redial_ms)
          .bind(output::output_spec_with_farm("built events"), &S::output);
  return spec;
}

std::string Topology::name(transport::AppIndex index) const {
  return detail::peer_name(ids, index);
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

  auto member = [&](const std::string& id, const char* key, const char* type,
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
    return ok();
  };
  for (const auto& id : ru_ids) {
    const runtime::ApplicationConfig* ru = nullptr;
    if (auto r = member(id, "rus", "ru", ru); !r) return r.error();
    if (std::find(t.rus.begin(), t.rus.end(), ru->index) != t.rus.end()) {
      return error(runtime::application_named(evm->id) + " parameter 'rus': '" + id +
                   "' is listed twice");
    }
    runtime::ParamReader ru_params = params_of(*ru);
    t.rus.push_back(ru->index);
    t.ru_feds.push_back(ru_params.get<std::uint32_t>("feds"));
    if (auto r = ru_params.status(); !r) return r.error();
  }
  std::uint64_t windows = 0;
  for (const auto& id : bu_ids) {
    const runtime::ApplicationConfig* bu = nullptr;
    if (auto r = member(id, "bus", "bu", bu); !r) return r.error();
    if (std::find(t.bus.begin(), t.bus.end(), bu->index) != t.bus.end()) {
      return error(runtime::application_named(evm->id) + " parameter 'bus': '" + id +
                   "' is listed twice");
    }
    runtime::ParamReader bu_params = params_of(*bu);
    const auto window = bu_params.get<std::uint32_t>("blocks_in_flight");
    const auto events = bu_params.get<std::uint32_t>("events_per_request");
    const auto output = bu_params.get<nlohmann::json>("output");
    if (auto r = bu_params.status(); !r) return r.error();
    t.bus.push_back(bu->index);
    t.bu_windows.push_back(window);
    // Outputs that keep what they write: a block granted to such a BU is never given to
    // another (event files are salvaged to decide it; FRD files are not yet: it stays in doubt).
    const std::string kind = output.is_object() ? output.value("kind", std::string()) : "";
    t.bu_durable.push_back(kind == "file" || kind == "frd");
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
  t.lookahead_events = 2 * windows * t.max_block_events;
  return t;
}

}  // namespace daqflow::apps::evb
