#include "ts_builder_app.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "daqflow/apps/output/salvage.hpp"
#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/evb.hpp"
#include "daqflow/wire/farm.hpp"
#include "ts_schedule.hpp"

namespace daqflow::apps::timeslice {

namespace {

constexpr std::int64_t kExpirePeriodNs = 10'000'000;

}  // namespace

void TsBuilder::release() {
  if (output_) {
    if (auto r = output_->close(); !r) {
      spdlog::warn("{}: closing the output: {}", id(), r.error().message());
    }
    while (output::OutputBatch* b = output_->poll_done()) b->clear();
    // The output's figures outlive it: the run's results are read once it is gone.
    files_written_.add(*output_);
    const std::lock_guard lock(results_mutex_);
    output_stats_ = output_->stats();
    output_.reset();
  }
  for (auto& b : batches_) b.clear();
  assembly_.clear();
  for (ControlLog& log : acks_) log.clear();
  to_manager_.clear();
  endpoint_ = nullptr;
  control_pool_ = nullptr;
}

bool TsBuilder::complete(TsAssembly::Timeslice& t) {
  if (t.awaiting_commit) return false;
  if (!has_manager_ || t.granted) return write(t);
  // Ask first: the manager grants each timeslice's write to one builder only.
  wire::TsCommit q{t.index, epoch_, wire::CommitAnswer::ask};
  std::array<std::byte, wire::kTsCommitSize> bytes{};
  wire::encode(q, bytes);
  if (!send_to_manager(wire::MessageType::ts_commit, t.index, bytes)) return false;
  t.awaiting_commit = true;
  t.asked_epoch = epoch_;
  return true;
}

void TsBuilder::on_manager(const Completion& c) {
  if (c.message.segment_count != 1) {
    messages_malformed_->add_single_writer();
    return;
  }
  if (c.message.type == wire::MessageType::fence) {
    wire::Fence f;
    if (wire::decode(c.message.segments[0].bytes(), f) != wire::PayloadStatus::ok) {
      messages_malformed_->add_single_writer();
      return;
    }
    if (f.epoch <= epoch_) return;
    fences_->add_single_writer();
    const std::size_t dropped = assembly_.drop_unasked();
    spdlog::warn(
        "{}: fenced by the manager (epoch {} -> {}): {} timeslice(s) dropped, the "
        "others build them",
        id(), epoch_, f.epoch, dropped);
    epoch_ = f.epoch;
    send_report();  // rejoins under the new epoch
    return;
  }
  if (c.message.type != wire::MessageType::ts_commit) {
    messages_malformed_->add_single_writer();
    return;
  }
  wire::TsCommit a;
  if (wire::decode(c.message.segments[0].bytes(), a) != wire::PayloadStatus::ok ||
      a.answer == wire::CommitAnswer::ask) {
    messages_malformed_->add_single_writer();
    return;
  }
  TsAssembly::Timeslice* t = assembly_.find(a.index);
  if (t == nullptr || !t->awaiting_commit) return;
  if (a.answer == wire::CommitAnswer::denied) {
    commits_denied_->add_single_writer();
    assembly_.drop(*t);
    return;
  }
  t->awaiting_commit = false;
  t->granted = true;
  (void)write(*t);  // or once the output has room (work)
}

bool TsBuilder::write(TsAssembly::Timeslice& b) {
  if (free_.empty()) return false;  // the output is behind: the next turn
  output::OutputBatch* batch = free_.back();
  const auto slot = static_cast<std::size_t>(batch - batches_.data());
  Written& w = written_[slot];
  w.index = b.index;
  w.epoch = epoch_;
  w.complete = assembly_.complete(b);
  std::copy(b.have.begin(), b.have.end(), w.from.begin());
  if (!w.complete) {
    std::string missing;
    bool first = false;  // an input missing for the first time in the run
    {
      const std::lock_guard lock(results_mutex_);
      for (std::size_t i = 0; i < inputs_.size(); ++i) {
        if (b.have[i] != 0) continue;
        first = first || missing_by_input_[i] == 0;
        ++missing_by_input_[i];
        missing += (missing.empty() ? "" : ", ") + detail::id_of(ids_, inputs_[i]);
      }
    }
    if (fail_incomplete_) {
      fail("timeslice " + std::to_string(b.index) + " is incomplete: no contribution from " +
           missing);
      return false;
    }
    // One line per input missing, not one per timeslice: a lost input leaves every timeslice
    // after it incomplete, thousands a second.
    if (first) {
      spdlog::warn(
          "{}: timeslice {} written incomplete: no contribution from {} (further timeslices "
          "without these inputs are only counted: missing_by_input)",
          id(), b.index, missing);
    }
    timeslices_incomplete_->add_single_writer();
  } else {
    timeslices_complete_->add_single_writer();
  }
  wire::TimesliceDescriptor d;
  d.index = b.index;
  d.start_ns = b.index * geometry_.duration_ns();
  d.microslice_ns = geometry_.microslice_ns;
  d.core_microslices = geometry_.core;
  d.overlap_microslices = geometry_.overlap;
  d.components_expected = static_cast<std::uint16_t>(inputs_.size());
  d.components_present = static_cast<std::uint16_t>(b.present);
  d.flags = w.complete ? 0u : std::uint32_t{wire::kTimesliceIncomplete};
  wire::encode(d, std::span<std::byte, wire::kTimesliceDescriptorSize>(w.descriptor));

  free_.pop_back();
  batch->clear();
  batch->block_id = b.index;
  output::BuiltEvent e;
  e.number = b.index;
  e.flags = w.complete ? 0u : std::uint32_t{wire::kEventIncomplete};
  e.first_piece = 0;
  batch->pieces.push_back({w.descriptor.data(), wire::kTimesliceDescriptorSize});
  std::uint64_t size = wire::kTimesliceDescriptorSize;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    if (b.have[i] == 0) continue;
    transport::Message& m = b.parts[i];
    for (std::uint8_t s = 0; s < m.segment_count; ++s) {
      transport::Segment& seg = m.segments[s];
      if (seg.length == 0) continue;
      batch->pieces.push_back({seg.buffer.data() + seg.offset, seg.length});
      size += seg.length;
      batch->buffers.push_back(std::move(seg.buffer));
    }
    m.clear();
  }
  e.piece_count = static_cast<std::uint32_t>(batch->pieces.size());
  e.size = size;
  batch->events.push_back(e);
  bytes_done_ += size;
  ++done_total_;
  assembly_.finish(b);
  if (!output_->submit(batch)) {
    // Cannot happen: at most kOutputDepth batches are lent, the output's queue holds as many.
    fail("the output refused a timeslice");
    return false;
  }
  ++in_output_;
  return true;
}

int TsBuilder::flush_outputs() {
  int work = 0;
  while (output::OutputBatch* batch = output_->poll_done()) {
    const auto slot = static_cast<std::size_t>(batch - batches_.data());
    Written& w = written_[slot];
    if (!output_->failed()) {
      // The output counts what its disk cap kept out before it hands the batch back (and
      // perhaps the next batch's already: batches are written in order).
      if (output_->stats().events_over_cap > over_cap_seen_) {
        timeslices_not_written_->add_single_writer();
        ++over_cap_seen_;
      } else {
        timeslices_written_->add_single_writer();
      }
      const auto status = w.complete ? wire::TsAckStatus::complete : wire::TsAckStatus::incomplete;
      for (std::size_t i = 0; i < inputs_.size(); ++i) {
        if (w.from[i] != 0) send_ack(i, w.index, status);
      }
      if (has_manager_) {
        wire::TsDone d{w.index, w.epoch, w.complete ? 0u : 1u};
        std::array<std::byte, wire::kTsDoneSize> bytes{};
        wire::encode(d, bytes);
        if (!to_manager_.push(wire::MessageType::ts_done, w.index, bytes)) {
          fail("the log of ts_done messages to the manager is full: it takes none");
        }
        recent_done_[done_count_++ % recent_done_.size()] = d;
      }
    }
    batch->clear();
    free_.push_back(batch);
    --in_output_;
    ++work;
  }
  if (output_->failed()) fail("output failed: " + output_->failure());
  return work;
}

namespace {

// The bytes [at, at + length) of a message's pieces as a message of their own, sharing its
// buffers; false when they take more pieces than a message holds.
bool slice(const transport::Message& m, std::uint64_t at, std::uint64_t length,
           transport::Message& out) {
  out.clear();
  out.type = m.type;
  for (const transport::Segment& s : m.pieces()) {
    if (length == 0) break;
    if (at >= s.length) {
      at -= s.length;
      continue;
    }
    const std::uint64_t n = std::min<std::uint64_t>(s.length - at, length);
    if (!out.add(s.buffer.share(), s.offset + static_cast<std::uint32_t>(at),
                 static_cast<std::uint32_t>(n))) {
      return false;
    }
    at = 0;
    length -= n;
  }
  return length == 0;
}

// A message's pieces as the contribution checks read them.
using PieceSpans = std::array<std::span<const std::byte>, transport::kMaxSegments>;
Pieces pieces_of(const transport::Message& m, PieceSpans& spans) {
  for (std::uint8_t s = 0; s < m.segment_count; ++s) spans[s] = m.segments[s].bytes();
  return {spans.data(), m.segment_count};
}

}  // namespace

void TsBuilder::on_contributions(Completion& c, std::size_t input, std::int64_t now) {
  if (input == turns_.holder) turns_.active_ns = now;
  PieceSpans spans{};
  const Pieces pieces = pieces_of(c.message, spans);
  // One contribution, or several small ones back to back (ts_batch.hpp), each sized by its
  // descriptor.
  std::uint64_t at = 0;
  const auto reject = [&](std::string_view why) {
    contributions_rejected_->add_single_writer();
    spdlog::warn("{}: message of '{}' rejected from byte {} of {} on: {}", id(),
                 detail::id_of(ids_, inputs_[input]), at, c.size, why);
  };
  while (at < c.size) {
    std::array<std::byte, wire::kContributionSize> head{};
    const std::uint64_t bytes = c.size - at >= head.size() && gather(pieces, at, head)
                                    ? wire::contribution_size(head, c.size - at)
                                    : 0;
    if (bytes == 0) {
      return reject(
          "the contribution descriptor there is malformed or counts more bytes than are left");
    }
    if (at == 0 && bytes == c.size) {  // the whole message
      on_contribution(c.message, pieces, bytes, c.message.tag, input, now);
      return;
    }
    transport::Message part;
    if (!slice(c.message, at, bytes, part)) {
      return reject("its contribution there spans more pieces than a message holds");
    }
    part.tag = wire::load_le64(head.data());  // the descriptor's timeslice index
    PieceSpans part_spans{};
    on_contribution(part, pieces_of(part, part_spans), bytes, part.tag, input, now);
    at += bytes;
  }
}

void TsBuilder::on_contribution(transport::Message& part, Pieces pieces, std::uint64_t bytes,
                                std::uint64_t index, std::size_t input, std::int64_t now) {
  contributions_->add_single_writer();
  bytes_in_->add_single_writer(bytes);
  if (assembly_.done(index)) {
    contributions_late_->add_single_writer();
    send_ack(input, index, wire::TsAckStatus::late);
    return;
  }
  const ContributionCheck check = check_contribution(pieces, bytes, geometry_, index, verify_crc_);
  if (!check.problem.empty()) {
    contributions_rejected_->add_single_writer();
    spdlog::warn("{}: contribution of '{}' to timeslice {} rejected: {}", id(),
                 detail::id_of(ids_, inputs_[input]), index, check.problem);
    return;
  }
  if (has_manager_ && check.header.epoch != epoch_) {
    // Assigned to this builder before it was fenced: the manager has given it to another.
    contributions_fenced_->add_single_writer();
    return;
  }
  switch (assembly_.add(index, input, part, now)) {
    case TsAssembly::Added::complete:
      (void)complete(*assembly_.find(index));
      break;
    case TsAssembly::Added::duplicate:
      contributions_duplicate_->add_single_writer();
      break;
    case TsAssembly::Added::late:  // done before: checked above
    case TsAssembly::Added::part:
      break;
  }
}

void TsBuilder::lose_input(std::size_t input, const std::string& why) {
  input_down_ns_[input] = 0;
  if (!assembly_.alive(input)) return;
  assembly_.lose_input(input);
  if (turns_.holder == input) turns_.holder = Turns::kNone;
  turns_.asked[input] = 0;
  acks_[input].drop(inputs_[input]);  // what waits for it goes nowhere now
  const std::string name = detail::id_of(ids_, inputs_[input]);
  {
    const std::lock_guard lock(results_mutex_);
    lost_inputs_.push_back(name);
  }
  spdlog::warn("{}: input '{}' lost ({}); timeslices without it are written incomplete", id(), name,
               why);
}

// A timeslice it did not make (inputs may end a few apart), or had acknowledged by a builder
// since lost (which others then build again from the rest), is written without its part.
void TsBuilder::input_ended(std::size_t input) {
  if (!assembly_.alive(input)) return;  // said so, then closed its link
  assembly_.lose_input(input);
  if (turns_.holder == input) turns_.holder = Turns::kNone;
  turns_.asked[input] = 0;
  acks_[input].drop(inputs_[input]);
  spdlog::info("{}: input '{}' ended", id(), detail::id_of(ids_, inputs_[input]));
}

void TsBuilder::on_peer_gone(AppIndex peer, std::string_view reason) {
  (void)check_received();  // what came before the loss
  if (has_manager_ && peer == manager_) {
    // The manager closing in order (it halts before the builders) ends nothing here.
    if (!reason.empty() && !winding_down()) manager_link_failed(reason);
    return;
  }
  const auto it = std::find(inputs_.begin(), inputs_.end(), peer);
  if (it == inputs_.end()) return;
  const auto input = static_cast<std::size_t>(it - inputs_.begin());
  // An input that is halted says goodbye in order: it ended. One that fails is lost.
  if (reason.empty()) {
    input_ended(input);
    return;
  }
  if (!winding_down() && assembly_.alive(input) && input_down_ns_[input] == 0) {
    input_link_failed(input, reason);
    return;
  }
  lose_input(input, "connection failed: " + std::string(reason));
}

int TsBuilder::work(std::int64_t now) {
  if (failed()) return 0;
  int work = check_received();  // after the round's turn messages (on_turn)
  if (manager_down_ns_ != 0) (void)check_manager_link();
  if (any_input_down_) check_input_links();
  work += output_->progress();
  work += flush_outputs();
  // Complete timeslices wait here when the output was full; expired ones are written flagged.
  if (assembly_.building() > 0 && (now >= next_expire_ns_ || !free_.empty())) {
    const bool expire = now >= next_expire_ns_;
    work +=
        assembly_.each_due(now, expire, [this](TsAssembly::Timeslice& t) { return complete(t); });
    if (expire) next_expire_ns_ = now + std::min<std::int64_t>(kExpirePeriodNs, timeout_ns_ / 4);
  }
  if (has_manager_ && now >= next_report_ns_ && check_manager_link()) {
    send_report();
    next_report_ns_ = now + report_ns_;
  }
  timeslices_building_->set(static_cast<double>(assembly_.building()));
  if (!sampler_.started()) {
    if (done_total_ > 0) sampler_.start(now, bytes_done_, done_total_);
  } else {
    (void)sampler_.tick(now, bytes_done_, done_total_);
  }
  if (in_turns()) work += give_turn(now);
  if (!end_all_told_ && end_vote_.any()) work += tell_end();
  // Acknowledgements of late contributions (the handlers) and of what was written (above).
  work += post_control();
  return work;
}

void TsBuilder::wait_for_work(std::chrono::microseconds timeout) {
  // The output's completions and the timeouts need turns without a message.
  const bool pending = in_output_ > 0 || !control_idle();
  std::chrono::microseconds cap{pending ? 200 : 2000};
  if (schedule_.builders > 0 && !in_turns() && producing() && !control_idle()) {
    // Fixed slots: acknowledgements wait for their inputs' slots, sent at the next slot's start.
    if (!timer_slack_set_) {
      keep_slot_time();
      timer_slack_set_ = true;
    }
    cap = std::min(cap, until_next_slot(schedule_clock_ns(*clock_), schedule_.slot_ns));
  }
  endpoint_->wait(std::min(timeout, cap));
}

nlohmann::json TsBuilder::results() const {
  if (contributions_ == nullptr) return nlohmann::json::object();
  nlohmann::json r;
  metrics_->counters(r);
  r["timeslices_building"] = static_cast<std::uint64_t>(timeslices_building_->value());
  output::OutputStats s;
  if (output_) {
    s = output_->stats();
  } else {
    const std::lock_guard lock(results_mutex_);
    s = output_stats_;
  }
  r["bytes_written"] = s.bytes_written;
  r["files_closed"] = s.files_closed;
  r["files"] = files_written_.to_json();
  r["timeslices_copied"] = s.events_copied;  // farm: in more pieces than a message carries
  detail::put_rates(r, sampler_, "timeslices_per_s");
  const std::lock_guard lock(results_mutex_);
  nlohmann::json missing = nlohmann::json::object();
  for (std::size_t i = 0; i < missing_by_input_.size(); ++i) {
    if (missing_by_input_[i] > 0) missing[detail::id_of(ids_, inputs_[i])] = missing_by_input_[i];
  }
  r["missing_by_input"] = missing;
  r["lost_inputs"] = lost_inputs_;
  return r;
}

void TsBuilder::fold_results(nlohmann::json& run, const std::string& id,
                             const nlohmann::json& app) {
  auto count = [](const nlohmann::json& o, const char* key) {
    return o.contains(key) && o[key].is_number() ? o[key].get<std::uint64_t>() : 0;
  };
  for (const char* key :
       {"timeslices_complete", "timeslices_incomplete", "timeslices_written",
        "timeslices_not_written", "contributions_late", "contributions_rejected"}) {
    run[key] = count(run, key) + count(app, key);
  }
  // A lost builder's timeslices that no finished file holds (its salvage's count).
  run["timeslices_not_written"] =
      count(run, "timeslices_not_written") + count(app, "timeslices_lost_from_disk");
  run["timeslices_per_s"] = run.value("timeslices_per_s", 0.0) + app.value("timeslices_per_s", 0.0);
  run["builder_mb_per_s"] = run.value("builder_mb_per_s", 0.0) + app.value("mb_per_s", 0.0);
  if (!run.contains("ts_builders") || !run["ts_builders"].is_object()) {
    run["ts_builders"] = nlohmann::json::object();
  }
  run["ts_builders"][id] = {
      {"timeslices_written", count(app, "timeslices_written")},
      {"missing_by_input", app.value("missing_by_input", nlohmann::json::object())}};
}

// Round robin: the inputs sent what it had not acknowledged to the next builder; its files are
// cut before the first of those timeslices (it acknowledged in the order it wrote), so that none
// is on disk twice, and finished.
Result<runtime::Settled> TsBuilder::settle_round_robin(const runtime::LostApp& lost,
                                                       const nlohmann::json& output) {
  if (!output::keeps_files(output)) return runtime::Settled{};
  runtime::ParamReader p(lost.app.params, runtime::application_named(lost.app.id));
  const auto inputs = p.get<std::vector<std::string>>("inputs");
  if (auto r = p.status(); !r) return r.error();
  // Each input loses the builder once its link failed and was not made again within the
  // input's redial_ms; allow for a slow one.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<std::uint64_t> sent_again;
  for (const std::string& input : inputs) {
    for (;;) {
      auto answer = lost.call(input, "sent_again", {{"builder", lost.app.id}});
      if (!answer) return answer.error();
      if (answer->value("lost", false)) {
        for (const auto& k : (*answer)["timeslices"]) sent_again.push_back(k.get<std::uint64_t>());
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return Error(ErrorCode::timed_out,
                     "input '" + input + "' did not lose '" + lost.app.id + "' within 60 s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  std::string dir = output.value("dir", std::string());
  if (dir.empty()) dir = lost.cluster.run.output;
  auto report = output::salvage_bu_files(dir, lost.cluster.run.number, lost.app.id, {}, sent_again);
  if (!report) return report.error();
  runtime::Settled settled;
  std::sort(sent_again.begin(), sent_again.end());
  sent_again.erase(std::unique(sent_again.begin(), sent_again.end()), sent_again.end());
  settled.report = fmt::format(
      "builder '{}': salvaged {} file(s) in {} ({} bytes cut; {} timeslice(s) sent again to the "
      "others); {} timeslices on disk",
      lost.app.id, report->files.size(), dir, report->bytes_cut, sent_again.size(),
      report->events_on_disk);
  for (const std::string& why : report->unfinished) settled.report += "; not finished: " + why;
  settled.results["timeslices_written"] = report->events_on_disk;
  settled.results["timeslices_lost_from_disk"] = report->events_lost;
  return settled;
}

Result<runtime::Settled> TsBuilder::after_loss(const runtime::LostApp& lost) {
  runtime::ParamReader p(lost.app.params, runtime::application_named(lost.app.id));
  const auto output = p.get<nlohmann::json>("output");
  const auto manager = p.get<std::string>("manager");
  if (auto r = p.status(); !r) return r.error();
  if (manager.empty()) return settle_round_robin(lost, output);
  // The manager declares a dead builder lost at the latest after its heartbeat timeout; only
  // then are its timeslices in doubt known.
  const nlohmann::json who = {{"builder", lost.app.id}};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  nlohmann::json doubt;
  for (;;) {
    auto answer = lost.call(manager, "in_doubt", who);
    if (!answer) return answer.error();
    doubt = std::move(*answer);
    if (doubt.value("lost", false)) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      return Error(ErrorCode::timed_out, "the manager '" + manager + "' did not declare '" +
                                             lost.app.id + "' lost within 60 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::vector<output::SalvageBlock> blocks;
  for (const auto& k : doubt["timeslices"]) {
    const auto index = k.get<std::uint64_t>();
    blocks.push_back({index, index, 1});
  }
  nlohmann::json written = nlohmann::json::array();
  std::string what = "no files (output " + output.value("kind", std::string("discard")) + ")";
  runtime::Settled settled;
  if (output::keeps_files(output)) {
    std::string dir = output.value("dir", std::string());
    if (dir.empty()) dir = lost.cluster.run.output;
    auto report = output::salvage_bu_files(dir, lost.cluster.run.number, lost.app.id, blocks);
    if (!report) return report.error();
    for (const auto id : report->written) written.push_back(id);
    what = std::to_string(report->files.size()) + " file(s) finished, " +
           std::to_string(report->bytes_cut) + " bytes cut";
    for (const std::string& why : report->unfinished) what += "; not finished: " + why;
    settled.results["timeslices_written"] = report->events_on_disk;
    settled.results["timeslices_lost_from_disk"] = report->events_lost;
  }
  auto answer = lost.call(manager, "salvaged", {{"builder", lost.app.id}, {"written", written}});
  if (!answer) return answer.error();
  settled.report = "builder '" + lost.app.id + "': " + std::to_string(blocks.size()) +
                   " timeslice(s) in doubt, " + std::to_string(written.size()) + " on disk; " +
                   what;
  return settled;
}

}  // namespace daqflow::apps::timeslice
