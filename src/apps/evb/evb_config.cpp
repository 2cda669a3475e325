#include "evb_config.hpp"

#include <algorithm>
#include <bit>

#include "apps/app_support.hpp"
#include "daqflow/apps/evb/emulator.hpp"
#include "daqflow/wire/evb.hpp"
#include "sources.hpp"

namespace daqflow::apps::evb {

using runtime::ParamKind;
using runtime::ParamSpec;

namespace {

ParamSpec spec(std::string name, ParamKind kind, std::string help, std::string default_json,
               std::optional<double> min = {}, std::optional<double> max = {},
               std::vector<std::string> choices = {}) {
  ParamSpec p;
  p.name = std::move(name);
  p.kind = kind;
  p.help = std::move(help);
  p.default_json = std::move(default_json);
  p.min = min;
  p.max = max;
  p.choices = std::move(choices);
  return p;
}

std::vector<std::string> ids_of(const nlohmann::json& params, const char* key) {
  std::vector<std::string> out;
  const auto it = params.find(key);
  if (it == params.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::int64_t integer_of(const nlohmann::json& params, const char* key, std::int64_t fallback) {
  const auto it = params.find(key);
  return it != params.end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
}

}  // namespace

std::vector<ParamSpec> readout_param_specs() {
  ParamSpec size = spec("fragment_size", ParamKind::object,
                        "FED emulator: fragment size distribution (bytes, whole fragment)", "{}");
  size.fields = {
      spec("dist", ParamKind::string, "fixed, uniform or lognormal", "\"lognormal\"", {}, {},
           {"fixed", "uniform", "lognormal"}),
      spec("mean", ParamKind::number, "mean fragment size, bytes", "2048", 16,
           kMaxEmulatedFragmentSize),
      spec("sd", ParamKind::number, "standard deviation, bytes", "1024", 0,
           kMaxEmulatedFragmentSize),
      spec("min", ParamKind::integer, "smallest fragment, bytes (rounded up to 8)", "64", 16,
           kMaxEmulatedFragmentSize),
      spec("max", ParamKind::integer, "largest fragment, bytes (rounded down to 8)", "65536", 16,
           kMaxEmulatedFragmentSize),
  };
  std::vector<ParamSpec> specs = {
      spec("feds", ParamKind::integer, "FEDs read by this RU (one fragment each per event)", "8", 1,
           kMaxFedsPerRu),
      spec("first_fed_id", ParamKind::integer,
           "FED id of the first FED; null: 100 * the RU's position (EVM 0, then the EVM's rus)",
           "null", 0, 4095),
      size,
      spec("seed", ParamKind::integer, "FED emulator: seed of the fragment sizes and payloads", "1",
           0),
      spec("payload", ParamKind::string,
           "FED emulator: template (one pattern per FED, fast) or pattern (differs per event)",
           "\"template\"", {}, {}, {"template", "pattern"}),
      spec("input", ParamKind::string, "where fragments come from: emulator or network",
           "\"emulator\"", {}, {}, {"emulator", "network"}),
      spec("chunk_size", ParamKind::integer,
           "bytes per chunk of super-fragment memory (a multiple of 64)", "4194304", 4096,
           2147483648.0),
      spec("chunks", ParamKind::integer, "chunks of super-fragment memory", "32", 2, 65536),
  };
  for (auto& p : network_input_params()) specs.push_back(std::move(p));
  return specs;
}

std::vector<ParamSpec> ru_param_specs() {
  std::vector<ParamSpec> specs = {
      spec("evm", ParamKind::app_ref, "the EVM of this builder", ""),
  };
  for (auto& p : readout_param_specs()) specs.push_back(std::move(p));
  return specs;
}

std::vector<ParamSpec> evm_param_specs() {
  std::vector<ParamSpec> specs = {
      spec("rus", ParamKind::app_ref_list, "the RUs of this builder (the EVM is one more)", "[]"),
      spec("bus", ParamKind::app_ref_list, "the BUs of this builder", ""),
      spec("trigger_rate_hz", ParamKind::number, "trigger rate limit; 0: as fast as possible", "0",
           0),
      spec("heartbeat_timeout_ms", ParamKind::integer,
           "a BU silent for this long is lost; its blocks go to the others", "2000", 10, 3600000),
  };
  for (auto& p : readout_param_specs()) specs.push_back(std::move(p));
  return specs;
}

std::vector<ParamSpec> bu_param_specs() {
  ParamSpec output = spec("output", ParamKind::object,
                          "where built events go: {kind: discard} or {kind: file, dir, "
                          "max_file_mb, max_file_events, max_total_mb}",
                          "{}");
  output.fields = {
      spec("kind", ParamKind::string, "discard or file", "\"discard\"", {}, {},
           {"discard", "file"}),
      spec("dir", ParamKind::string, "file: directory; empty: run.output", "\"\""),
      spec("max_file_mb", ParamKind::number, "file: roll files at this size, MiB; 0: no limit",
           "256", 0),
      spec("max_file_events", ParamKind::integer,
           "file: roll files after this many events; 0: no limit", "0", 0),
      spec("max_total_mb", ParamKind::number,
           "file: stop writing (events still built) past this much, MiB; 0: no limit", "0", 0),
  };
  return {
      spec("evm", ParamKind::app_ref, "the EVM of this builder", ""),
      spec("events_per_request", ParamKind::integer, "events per block asked of the EVM", "32", 1,
           wire::kMaxEventsPerBlock),
      spec("blocks_in_flight", ParamKind::integer, "blocks requested or being built at once", "4",
           1, 256),
      spec("timeout_ms", ParamKind::integer,
           "wait this long for a RU's part of a block, then its events are incomplete", "2000", 1,
           3600000),
      spec("check_crc", ParamKind::boolean, "check every FED fragment's CRC", "false"),
      spec("on_incomplete", ParamKind::string, "incomplete events: write (flagged) or fail the run",
           "\"write\"", {}, {}, {"write", "fail"}),
      spec("heartbeat_ms", ParamKind::integer, "heartbeat period towards the EVM", "200", 1,
           600000),
      output,
  };
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
  auto error = [&](const std::string& what) {
    return Error("application '" + self.id + "' (" + self.location.str() + "): " + what);
  };
  const runtime::ApplicationConfig* evm = &self;
  if (self.type != "evm") {
    const auto it = ctx.params().find("evm");
    const std::string evm_id =
        it != ctx.params().end() && it->is_string() ? it->get<std::string>() : "";
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
  t.rus.push_back(evm->index);
  t.ru_feds.push_back(static_cast<std::uint32_t>(integer_of(evm->params, "feds", 0)));
  // The EVM's own (current) parameters when configuring it; the file's for the others.
  const nlohmann::json& evm_params = evm == &self ? ctx.params() : evm->params;

  auto member = [&](const std::string& id, const char* key, const char* type,
                    const runtime::ApplicationConfig*& out) -> Result<void> {
    out = cluster.find_application(id);
    const std::string where = "application '" + evm->id + "' parameter '" + key + "': ";
    if (out == nullptr) return error(where + "no application '" + id + "' in " + cluster.file);
    if (out->type != type)
      return error(where + "'" + id + "' is a " + out->type + ", not a " + type);
    const auto names = out->params.find("evm");
    if (names == out->params.end() || !names->is_string() || names->get<std::string>() != evm->id) {
      return error(where + "'" + id + "' does not name '" + evm->id + "' as its evm");
    }
    return ok();
  };
  for (const auto& id : ids_of(evm_params, "rus")) {
    const runtime::ApplicationConfig* ru = nullptr;
    if (auto r = member(id, "rus", "ru", ru); !r) return r.error();
    if (std::find(t.rus.begin(), t.rus.end(), ru->index) != t.rus.end()) {
      return error("application '" + evm->id + "' parameter 'rus': '" + id + "' is listed twice");
    }
    t.rus.push_back(ru->index);
    t.ru_feds.push_back(static_cast<std::uint32_t>(integer_of(ru->params, "feds", 0)));
  }
  std::uint64_t windows = 0;
  for (const auto& id : ids_of(evm_params, "bus")) {
    const runtime::ApplicationConfig* bu = nullptr;
    if (auto r = member(id, "bus", "bu", bu); !r) return r.error();
    if (std::find(t.bus.begin(), t.bus.end(), bu->index) != t.bus.end()) {
      return error("application '" + evm->id + "' parameter 'bus': '" + id + "' is listed twice");
    }
    const nlohmann::json& p = bu == &self ? ctx.params() : bu->params;
    const auto window =
        static_cast<std::uint32_t>(std::max<std::int64_t>(1, integer_of(p, "blocks_in_flight", 4)));
    const auto events = static_cast<std::uint32_t>(
        std::max<std::int64_t>(1, integer_of(p, "events_per_request", 32)));
    t.bus.push_back(bu->index);
    t.bu_windows.push_back(window);
    t.max_block_events = std::max(t.max_block_events, events);
    windows += window;
  }
  if (t.bus.empty()) return error("application '" + evm->id + "' parameter 'bus': no BU listed");
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

Result<ReadoutParams> read_readout_params(const nlohmann::json& params) {
  ReadoutParams r;
  const std::int64_t chunk = integer_of(params, "chunk_size", -1);
  const std::int64_t chunks = integer_of(params, "chunks", -1);
  if (chunk < 4096 || chunk % 64 != 0) {
    return Error("parameter 'chunk_size': " + std::to_string(chunk) +
                 " must be a multiple of 64, at least 4096");
  }
  if (chunks < 2) return Error("parameter 'chunks': " + std::to_string(chunks) + " is below 2");
  r.chunk_size = static_cast<std::size_t>(chunk);
  r.chunks = static_cast<std::size_t>(chunks);
  const auto input = params.find("input");
  r.network_input =
      input != params.end() && input->is_string() && input->get<std::string>() == "network";
  return r;
}

}  // namespace daqflow::apps::evb
