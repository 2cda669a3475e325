// What the controller does for a BU that died: its files salvaged, the EVM told what is on disk.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "bu_app.hpp"
#include "daqflow/apps/output/frd.hpp"
#include "daqflow/apps/output/salvage.hpp"

namespace daqflow::apps::evb {

// A BU with a file output died: finish its files and tell the EVM which of the blocks it was
// granted are on disk (salvage.hpp). Runs in the controller, on the host the BU ran on.
Result<runtime::Settled> BuilderUnit::after_loss(const runtime::LostApp& lost) {
  runtime::ParamReader p(lost.app.params, runtime::application_named(lost.app.id));
  const auto output = p.get<nlohmann::json>("output");
  const auto evm = p.get<std::string>("evm");
  if (auto r = p.status(); !r) return r.error();
  const std::string kind = output.is_object() ? output.value("kind", std::string()) : "";
  if (!output::keeps_files(output)) return runtime::Settled{};
  std::string dir = output.value("dir", std::string());
  if (kind == "frd") {
    // As the FRD output makes it: one directory per BU, the run's directory in it.
    if (dir.empty()) dir = (std::filesystem::path(lost.cluster.run.output) / lost.app.id).string();
    dir = (std::filesystem::path(dir) / output::frd_run_dir(lost.cluster.run.number)).string();
  }
  if (dir.empty()) dir = lost.cluster.run.output;

  // The EVM loses a dead BU at the latest after its heartbeat timeout; only then are its blocks
  // in doubt known.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  nlohmann::json doubt;
  for (;;) {
    auto answer = lost.call(evm, "in_doubt", nlohmann::json::object());
    if (!answer) return answer.error();
    doubt = std::move(*answer);
    const auto& gone = doubt["lost_bus"];
    if (std::find(gone.begin(), gone.end(), lost.app.id) != gone.end()) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      return Error(ErrorCode::timed_out,
                   "the EVM '" + evm + "' did not declare '" + lost.app.id + "' lost within 60 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::vector<output::SalvageBlock> blocks;
  for (const auto& b : doubt["blocks"]) {
    if (b["bu"] != lost.app.id) continue;
    // The files hold event ids (the event numbers with CMS numbering), not the builder's indexes.
    blocks.push_back({b["block"].get<std::uint64_t>(), b["first_id"].get<std::uint64_t>(),
                      b["events"].get<std::uint32_t>(), b["lumi_section"].get<std::uint32_t>()});
  }
  auto report = kind == "frd"
                    ? output::salvage_frd_files(dir, lost.cluster.run.number, lost.app.id, blocks)
                    : output::salvage_bu_files(dir, lost.cluster.run.number, lost.app.id, blocks);
  if (!report) return report.error();
  if (!blocks.empty()) {
    const nlohmann::json args = {
        {"bu", lost.app.id}, {"written", report->written}, {"not_written", report->not_written}};
    if (auto r = lost.call(evm, "resolve", args); !r) return r.error();
  }
  std::string text = fmt::format(
      "{}: salvaged {} file(s) in {} ({} events kept, {} bytes cut); of its {} block(s) in "
      "doubt, {} are on disk, {} are built again",
      lost.app.id, report->files.size(), dir, report->events_kept, report->bytes_cut, blocks.size(),
      report->written.size(), report->not_written.size());
  if (!report->undecided.empty())
    text += fmt::format(", {} stay in doubt", report->undecided.size());
  for (const std::string& why : report->unfinished) text += "; not finished: " + why;
  if (report->events_lost > 0) {
    text += fmt::format(
        "; {} event(s) written before are lost from the output (in a file that could not be "
        "finished; it also holds events built again: do not finish it as it is)",
        report->events_lost);
  }
  runtime::Settled settled{std::move(text), nlohmann::json::object()};
  // What its files hold now, and what it had written that no finished file holds.
  if (kind != "frd") settled.results["events_written"] = report->events_on_disk;
  settled.results["events_lost_from_disk"] = report->events_lost;
  return settled;
}

}  // namespace daqflow::apps::evb
