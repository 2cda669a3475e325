// make_output(): the BU's `output` parameter names its kind; each kind has its own factory
// (outputs.hpp).

#include "daqflow/apps/output/output.hpp"

#include <nlohmann/json.hpp>

#include "daqflow/runtime/config.hpp"
#include "daqflow/runtime/params.hpp"
#include "outputs.hpp"

namespace daqflow::apps::output {

std::vector<runtime::ParamSpec> file_output_param_fields() {
  using runtime::ParamSpec;
  return {
      ParamSpec::string("dir", "file: directory; empty: run.output").default_value(""),
      ParamSpec::number("max_file_mb", "file: roll files at this size, MiB; 0: no limit")
          .default_value(256)
          .at_least(0),
      ParamSpec::integer("max_file_events", "file: roll files after this many events; 0: no limit")
          .default_value(0)
          .at_least(0),
      ParamSpec::number("max_total_mb",
                        "file: stop writing (events still counted) past this much, MiB; 0: no "
                        "limit")
          .default_value(0)
          .at_least(0),
      ParamSpec::string("compression", "hdf5: none or gzip (HDF5's deflate filter)")
          .default_value("none")
          .one_of({"none", "gzip"}),
      ParamSpec::integer("compression_level", "hdf5: gzip's level").default_value(1).range(1, 9),
  };
}

runtime::ParamSpec discard_or_file_output_spec(const std::string& what) {
  std::vector<runtime::ParamSpec> fields = {
      runtime::ParamSpec::string("kind", "discard, file or hdf5")
          .default_value("discard")
          .one_of({"discard", "file", "hdf5"}),
  };
  for (auto& f : file_output_param_fields()) fields.push_back(std::move(f));
  return runtime::ParamSpec::object(
      "output",
      "where " + what +
          " go: {kind: discard}, {kind: file, dir, max_file_mb, max_file_events, max_total_mb} "
          "or {kind: hdf5, the same keys, compression, compression_level}",
      std::move(fields));
}

runtime::ParamSpec output_spec_with_farm(const std::string& what) {
  std::vector<runtime::ParamSpec> fields = {
      runtime::ParamSpec::string("kind", "discard, file, hdf5, farm or frd")
          .default_value("discard")
          .one_of({"discard", "file", "hdf5", "farm", "frd"}),
      runtime::ParamSpec::string("sfc", "farm: the SFC they go to").default_value(""),
      runtime::ParamSpec::integer("events_per_file",
                                  "frd: events per file (a file holds one luminosity section)")
          .default_value(400)
          .range(1, 65535),
      runtime::ParamSpec::string("incomplete",
                                 "frd: events without some RU's data: drop (counted lost in the "
                                 "EoLS) or write")
          .default_value("drop")
          .one_of({"drop", "write"}),
  };
  for (auto& f : file_output_param_fields()) fields.push_back(std::move(f));
  return runtime::ParamSpec::object(
      "output",
      "where " + what +
          " go: {kind: discard}, {kind: file, dir, max_file_mb, max_file_events, max_total_mb}, "
          "{kind: hdf5, the same keys, compression, compression_level}, {kind: farm, sfc} (the "
          "filter farm) or {kind: frd, dir, events_per_file, "
          "incomplete} (CMS FRD files for the HLT)",
      std::move(fields));
}

Result<void> farm_output_context(const runtime::ClusterConfig& cluster,
                                 const nlohmann::json& params, transport::Endpoint* endpoint,
                                 OutputContext& context) {
  if (!params.is_object() || params.value("kind", std::string()) != "farm") return ok();
  // The SFC says how many events an input may send it ahead (its input_window).
  const auto sfc_id = params.value("sfc", std::string());
  const runtime::ApplicationConfig* sfc = cluster.find_application(sfc_id);
  if (sfc == nullptr || sfc->type != "sfc") {
    return Error("kind farm: sfc '" + sfc_id + "' is no sfc application");
  }
  context.endpoint = endpoint;
  context.sfc = sfc->index;
  context.sfc_window = sfc->params.value("input_window", 0u);
  return ok();
}

void FilesWritten::add(const EventOutput& output) {
  auto files = output.files();
  const std::lock_guard lock(mutex_);
  files_.insert(files_.end(), std::make_move_iterator(files.begin()),
                std::make_move_iterator(files.end()));
}

void FilesWritten::clear() {
  const std::lock_guard lock(mutex_);
  files_.clear();
}

nlohmann::json FilesWritten::to_json() const {
  auto out = nlohmann::json::array();
  const std::lock_guard lock(mutex_);
  for (const auto& f : files_) {
    out.push_back(
        {{"path", f.path}, {"bytes", f.bytes}, {"events", f.events}, {"checksum", f.checksum}});
  }
  return out;
}

std::vector<runtime::HostNeeds::Disk> disk_needs(const nlohmann::json& output,
                                                 const runtime::ClusterConfig& cluster) {
  if (!keeps_files(output)) return {};
  constexpr double kMiB = 1024.0 * 1024.0;
  std::string dir = output.value("dir", "");
  if (dir.empty()) dir = cluster.run.output;
  const double total = output.value("max_total_mb", 0.0);
  const double file = output.value("max_file_mb", 0.0);
  const double mb = total > 0 ? total : file;
  return {{dir, static_cast<std::uint64_t>(mb * kMiB)}};
}

runtime::HostNeeds output_host_needs(const runtime::ApplicationConfig& app,
                                     const runtime::ClusterConfig& cluster) {
  runtime::HostNeeds needs;
  if (const auto it = app.params.find("output"); it != app.params.end()) {
    needs.disks = disk_needs(*it, cluster);
  }
  return needs;
}

bool keeps_files(const nlohmann::json& output) {
  const std::string kind = output.is_object() ? output.value("kind", std::string()) : "";
  return kind == "file" || kind == "hdf5" || kind == "frd";
}

Result<std::unique_ptr<EventOutput>> make_output(const nlohmann::json& params,
                                                 const OutputContext& context) {
  if (!params.is_object()) {
    return Error(
        "output: expected an object such as {kind: discard} or {kind: file, dir: PATH}, "
        "got " +
        runtime::json_text(params));
  }
  const auto kind = params.find("kind");
  if (kind == params.end() || !kind->is_string()) {
    return Error("output: missing 'kind' (discard, file, hdf5, farm or frd)");
  }
  const auto& name = kind->get_ref<const std::string&>();
  if (name == "discard") return make_discard_output(context);
  if (name == "file") return make_file_output(params, context);
  if (name == "hdf5") return make_hdf5_output(params, context);
  if (name == "farm") return make_farm_output(context);
  if (name == "frd") return make_frd_output(params, context);
  return Error("output: unknown kind '" + name + "' (known: discard, file, hdf5, farm, frd)");
}

}  // namespace daqflow::apps::output
