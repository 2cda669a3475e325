#include "evm_app.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "daqflow/wire/evb.hpp"
#include "daqflow/wire/fed.hpp"

namespace daqflow::apps::evb {

namespace {

// Heartbeats are checked this often (at most), and at least 4 times per timeout.
constexpr std::int64_t kCheckPeriodNs = 10'000'000;
// The token bucket holds at most this much time's worth of triggers.
constexpr double kBurstSeconds = 0.01;

}  // namespace

// The rates of results() count from the first Enable.
Result<void> EventManagerApp::enable() {
  if (enabled_ns_.load() == 0) enabled_ns_.store(clock_->now_ns());
  return ok();
}

void EventManagerApp::release() {
  assigns_.clear();
  replies_.clear();
  role_.release();
  endpoint_ = nullptr;
}

void EventManagerApp::lose_bu(AppIndex bu, const std::string& why, bool keep_granted) {
  const std::size_t orphans_before = evm_->orphans();
  if (evm_->lose(bu, keep_granted)) on_lost(bu, why, evm_->orphans() - orphans_before);
}

void EventManagerApp::on_lost(AppIndex bu, const std::string& why, std::size_t orphans) {
  publish_doubt();  // before the BU is listed lost: whoever sees it lost sees its blocks too
  role_.bu_gone(bu);
  std::string names;
  {
    const std::lock_guard lock(lost_mutex_);
    lost_bus_.push_back(topology_.name(bu));
    for (const auto& n : lost_bus_) names += (names.empty() ? "" : ", ") + n;
  }
  spdlog::warn("{}: BU '{}' lost ({}); {} of its blocks go to the {} BU(s) left", id(),
               topology_.name(bu), why, orphans, evm_->bus_alive());
  // Fenced: if it is only frozen or cut off, it learns this when it hears from us again.
  fence(bu);
  if (evm_->bus_alive() == 0) {
    events_lost_->set(static_cast<double>(evm_->lost()));
    fail("no BU left (lost: " + names + "); " + std::to_string(evm_->lost()) +
         " events in flight cannot be built");
  }
}

void EventManagerApp::fence(AppIndex bu) {
  wire::Fence f;
  f.bu = bu;
  f.epoch = evm_->epoch_of(bu);
  std::array<std::byte, wire::kFenceSize> payload{};
  wire::encode(f, payload);
  reply(bu, wire::MessageType::fence, f.epoch, payload);
}

void EventManagerApp::on_request(AppIndex bu, const wire::EventRequest& r, std::int64_t now) {
  if (!evm_->request(bu, r, now)) {
    // It missed its fence, or was started again: it learns its epoch and rejoins.
    replies_.revive(bu);
    fence(bu);
  }
}

void EventManagerApp::on_heartbeat(AppIndex bu, const wire::Heartbeat&, std::int64_t now) {
  evm_->heard_from(bu, now);
}

void EventManagerApp::on_commit_request(AppIndex bu, const wire::BlockAck& a, std::int64_t now) {
  const CommitOutcome outcome = evm_->commit(bu, a, now);
  if (outcome == CommitOutcome::invalid) {
    fail("commit_request from " + topology_.name(bu) + " for block " + std::to_string(a.block_id) +
         " counts " + std::to_string(a.built) + " built + " + std::to_string(a.incomplete) +
         " incomplete events, not the block's size");
    return;
  }
  wire::Commit answer;
  answer.block_id = a.block_id;
  answer.generation = a.generation;
  answer.verdict = outcome == CommitOutcome::granted ? wire::CommitVerdict::granted
                                                     : wire::CommitVerdict::fenced;
  std::array<std::byte, wire::kCommitSize> out{};
  wire::encode(answer, out);
  reply(bu, wire::MessageType::commit, a.block_id, out);
}

void EventManagerApp::on_ack(AppIndex bu, const wire::BlockAck& a, std::int64_t now) {
  if (evm_->ack(bu, a, now) == AckOutcome::invalid) {
    fail("block_ack from " + topology_.name(bu) + " for block " + std::to_string(a.block_id) +
         " counts " + std::to_string(a.built) + " built + " + std::to_string(a.incomplete) +
         " incomplete events, not the block's size");
  }
  last_built_ns_.store(now, std::memory_order_relaxed);
}

// The BU's link to a RU (or to us) was reset: what was in flight on it is gone, so the blocks
// given to it cannot be built whole. Lost now (and fenced), they go to the BUs left; it rejoins
// once its links are back. The last BU is kept: it writes those events flagged incomplete rather
// than the run losing them.
void EventManagerApp::on_leave(AppIndex bu, const wire::Fence& f, std::int64_t) {
  // Its connection may have failed and been made again: it hears from us again.
  replies_.revive(bu);
  if (!evm_->alive(bu)) {
    fence(bu);  // lost already (when its connection failed): it learns its epoch
    return;
  }
  if (f.epoch != evm_->epoch_of(bu)) return;
  if (evm_->bus_alive() > 1) {
    // It lives and writes what it was granted: that stays its own.
    lose_bu(bu, "it left: its link to a RU was reset", /*keep_granted=*/true);
  } else {
    spdlog::warn(
        "{}: BU '{}' asks to leave (its link to a RU was reset) but is the last BU: it keeps "
        "its blocks, whose events missing that RU's data are flagged incomplete",
        id(), topology_.name(bu));
  }
}

void EventManagerApp::on_rejoin(AppIndex bu, const wire::Fence& f, std::int64_t now) {
  if (!evm_->rejoin(bu, f.epoch, now)) return;
  role_.bu_back(bu);
  {
    const std::lock_guard lock(lost_mutex_);
    rejoined_bus_.push_back(topology_.name(bu));
  }
  spdlog::warn("{}: BU '{}' rejoined under epoch {}; it is served again", id(), topology_.name(bu),
               f.epoch);
  publish_doubt();
}

std::uint64_t EventManagerApp::trigger_limit(std::int64_t now) {
  const std::uint64_t produced = role_.produced();
  // Not before the round that saw the run enabled has set the bucket's clock (the state may
  // change while a round runs).
  if (!producing() || !watching_) return produced;
  const std::uint64_t ahead = lookahead_limit();
  if (rate_hz_ <= 0) return ahead;
  const double burst = std::max(1.0, rate_hz_ * kBurstSeconds);
  tokens_ = std::min(burst, tokens_ + rate_hz_ * static_cast<double>(now - refilled_ns_) * 1e-9);
  refilled_ns_ = now;
  return std::min(ahead, produced + static_cast<std::uint64_t>(tokens_));
}

// Tells the RUs (and this EVM's own store) which blocks are done, once per turn at most.
void EventManagerApp::reply(AppIndex bu, wire::MessageType type, std::uint64_t tag,
                            std::span<const std::byte> payload) {
  const auto it = std::find(topology_.bus.begin(), topology_.bus.end(), bu);
  if (it == topology_.bus.end()) return;
  if (!replies_.push(type, tag, payload, static_cast<int>(it - topology_.bus.begin()))) {
    fail("the queue of answers to the BUs is full (" + std::string(wire::to_string(type)) + " to " +
         topology_.name(bu) + ")");
  }
}

// Blocks in doubt leave the RUs' tables before a release could pass them; resolved ones go.
int EventManagerApp::hold_aside() {
  aside_changes_.clear();
  evm_->take_aside_changes(aside_changes_);
  for (const AsideChange& change : aside_changes_) {
    wire::Hold h;
    h.block_id = change.block_id;
    h.action = change.keep ? wire::HoldAction::keep : wire::HoldAction::free;
    role_.on_hold(h);
    std::array<std::byte, wire::kHoldSize> payload{};
    wire::encode(h, payload);
    if (!assigns_.push(wire::MessageType::hold, h.block_id, payload)) {
      fail("the queue of messages to the RUs is full (hold of block " + std::to_string(h.block_id) +
           ")");
    }
  }
  if (!aside_changes_.empty()) publish_doubt();
  return static_cast<int>(aside_changes_.size());
}

void EventManagerApp::publish_doubt() {
  auto blocks = evm_->doubt_blocks();
  const std::lock_guard lock(doubt_mutex_);
  doubt_ = std::move(blocks);
}

int EventManagerApp::apply_resolutions() {
  resolving_.clear();
  {
    const std::lock_guard lock(doubt_mutex_);
    if (resolutions_.empty()) return 0;
    resolving_.swap(resolutions_);
  }
  std::size_t written = 0;
  for (const auto& [block, was_written] : resolving_) {
    if (evm_->resolve(block, was_written) && was_written) ++written;
  }
  spdlog::warn(
      "{}: {} block(s) in doubt resolved from a lost BU's output: {} written there, {} "
      "to be built again",
      id(), resolving_.size(), written, resolving_.size() - written);
  publish_doubt();
  return static_cast<int>(resolving_.size());
}

Result<nlohmann::json> EventManagerApp::action(std::string_view name, const nlohmann::json& args) {
  const std::lock_guard lock(doubt_mutex_);
  if (name == "in_doubt") {
    nlohmann::json blocks = nlohmann::json::array();
    for (const auto& d : doubt_) {
      blocks.push_back({{"block", d.block_id},
                        {"first_event", d.first_event},
                        {"first_id", d.first_id},
                        {"lumi_section", d.lumi},
                        {"events", d.events},
                        {"generation", d.generation},
                        {"bu", topology_.name(d.bu)}});
    }
    nlohmann::json lost = nlohmann::json::array();
    {
      const std::lock_guard lost_lock(lost_mutex_);
      for (const auto& id : lost_bus_) lost.push_back(id);
    }
    return nlohmann::json{{"blocks", std::move(blocks)}, {"lost_bus", std::move(lost)}};
  }
  if (name != "resolve") return runtime::Application::action(name, args);
  auto invalid = [&](const std::string& what) {
    return Error(ErrorCode::invalid_argument, "resolve: " + what);
  };
  if (!args.is_object() || !args.contains("bu") || !args["bu"].is_string())
    return invalid("expected {bu, written: [block ids], not_written: [block ids]}");
  const std::string bu = args["bu"].get<std::string>();
  std::vector<std::pair<std::uint64_t, bool>> asked;
  for (const auto& [key, written] : {std::pair{"written", true}, std::pair{"not_written", false}}) {
    const auto it = args.find(key);
    if (it == args.end()) continue;
    if (!it->is_array()) return invalid(std::string("'") + key + "' must be a list of block ids");
    for (const auto& id : *it) {
      if (!id.is_number_unsigned())
        return invalid(std::string("'") + key + "' holds " + runtime::json_text(id));
      const auto block = id.get<std::uint64_t>();
      const bool known = std::any_of(doubt_.begin(), doubt_.end(), [&](const auto& d) {
        return d.block_id == block && topology_.name(d.bu) == bu;
      });
      if (!known) {
        return Error(ErrorCode::conflict, "resolve: block " + std::to_string(block) +
                                              " is not in doubt with BU '" + bu + "'");
      }
      asked.emplace_back(block, written);
    }
  }
  resolutions_.insert(resolutions_.end(), asked.begin(), asked.end());
  return nlohmann::json{{"queued", asked.size()}};
}

int EventManagerApp::release_closed() {
  const std::uint64_t below = evm_->closed_below();
  if (below <= released_ || !assigns_.has_room()) return 0;
  role_.on_release(below);
  std::array<std::byte, wire::kReleaseSize> payload{};
  wire::encode(wire::Release{below}, payload);
  (void)assigns_.push(wire::MessageType::release, below, payload);
  released_ = below;
  return 1;
}

void EventManagerApp::note_ids(std::int64_t now) {
  const std::int64_t enabled = enabled_ns_.load(std::memory_order_relaxed);
  for (const std::uint64_t produced = role_.produced(); ids_seen_ < produced; ++ids_seen_) {
    std::uint64_t id = ids_seen_;
    if (topology_.numbering == fed::EventNumbering::cms) {
      // The input checked every FED's numbers (and reported a bad one): follow the first FED.
      wire::FedHeaderFields header;
      const bool decoded =
          wire::decode_header(role_.event_bytes(ids_seen_), header) == wire::FedStatus::ok;
      (void)sequence_.take(decoded ? header.l1_id : sequence_.next_number());
      id = sequence_.current().packed();
    }
    const std::uint64_t section =
        lumi_events_ > 0
            ? ids_seen_ / lumi_events_
            : static_cast<std::uint64_t>(
                  enabled > 0 ? std::max<std::int64_t>(0, now - enabled) / lumi_ns_ : 0);
    const auto lumi = static_cast<std::uint32_t>(section + 1);
    if (ids_seen_ == 0 || id != last_id_ + 1 || lumi != last_lumi_) {
      evm_->begin_ids(ids_seen_, id, lumi);
    }
    last_id_ = id;
    last_lumi_ = lumi;
  }
}

int EventManagerApp::assign(bool flush) {
  int n = 0;
  evm_->set_triggered(role_.produced());
  wire::Assign a;
  std::array<std::byte, wire::kAssignSize> payload{};
  while (assigns_.has_room() && evm_->next_assign(a, flush)) {
    role_.on_assign(a);
    wire::encode(a, payload);
    (void)assigns_.push(wire::MessageType::assign, a.block_id, payload);
    ++n;
  }
  return n;
}

void EventManagerApp::publish() {
  auto delta = [](runtime::Counter* m, std::uint64_t value, std::uint64_t& last) {
    if (value > last) m->add_single_writer(value - last);
    last = value;
  };
  const EventManager& e = *evm_;
  delta(events_triggered_, e.triggered(), published_.triggered);
  delta(events_assigned_, e.assigned(), published_.assigned);
  delta(events_built_, e.built(), published_.built);
  delta(events_incomplete_, e.incomplete(), published_.incomplete);
  delta(events_reassigned_, e.reassigned(), published_.reassigned);
  delta(blocks_assigned_, e.blocks_assigned(), published_.blocks);
  delta(bytes_built_, e.bytes_built(), published_.bytes);
  events_in_flight_->set(static_cast<double>(e.in_flight()));
  events_lost_->set(static_cast<double>(e.lost()));
  events_in_doubt_->set(static_cast<double>(e.in_doubt()));
  delta(commits_fenced_, e.commits_fenced(), published_.fenced);
  bus_alive_->set(static_cast<double>(e.bus_alive()));
}

int EventManagerApp::answer(bool halting) {
  int work = apply_resolutions();
  work += hold_aside();
  work += release_closed();
  work += assign(halting);
  work += role_.send();
  gone_.clear();
  work += replies_.post(*endpoint_, gone_);  // a BU gone is lost through its completion
  gone_.clear();
  work += assigns_.post(*endpoint_, gone_);
  for (const AppIndex ru : gone_) {
    spdlog::warn("{}: RU '{}' refuses assigns; BUs will flag its events incomplete", id(),
                 topology_.name(ru));
  }
  return work;
}

int EventManagerApp::work(std::int64_t now) {
  if (failed()) return 0;
  const bool halting = this->halting();
  if (!watching_ && (run_state() == runtime::RunState::enabled || halting)) {
    watching_ = true;
    evm_->start_watch(now);
    refilled_ns_ = now;
  }
  evm_->ran(now);
  // Silence is judged once what waited has been read: an EVM that was itself frozen or
  // descheduled reads its BUs' heartbeats first. Under a flood that never lets up, it is judged
  // anyway a timeout late.
  if (watching_ && now >= next_check_ns_ &&
      (data_path().caught_up() || now >= next_check_ns_ + heartbeat_timeout_ns_)) {
    next_check_ns_ = now + std::min(kCheckPeriodNs, heartbeat_timeout_ns_ / 4);
    gone_.clear();
    const std::size_t orphans_before = evm_->orphans();
    evm_->check_heartbeats(now, gone_);
    if (!gone_.empty()) {
      const std::string why =
          "no message for " + std::to_string(heartbeat_timeout_ns_ / 1'000'000) + " ms";
      for (const AppIndex bu : gone_) on_lost(bu, why, evm_->orphans() - orphans_before);
    }
  }

  // What this round's messages asked for goes out before the readout writes more: a commit or an
  // assignment waiting behind the write of the next blocks would hold up the BUs and the RUs.
  int work = answer(halting);
  const std::uint64_t limit = trigger_limit(now);
  const bool triggering = producing();
  const std::uint32_t triggered = role_.produce(limit, triggering && limit == lookahead_limit());
  note_ids(now);
  if (rate_hz_ > 0) tokens_ = std::max(0.0, tokens_ - triggered);
  work += static_cast<int>(triggered);
  if (triggered > 0) work += answer(halting);
  if (role_.failed()) fail(role_.failure());
  if (const std::string broken = evm_->check_invariant(); !broken.empty()) {
    fail("accounting invariant violated: " + broken);
  }
  role_.publish();
  publish();
  const std::uint64_t done = evm_->built() + evm_->incomplete();
  if (!sampler_.started()) {
    if (done > 0) sampler_.start(now, evm_->bytes_built(), done);
  } else {
    (void)sampler_.tick(now, evm_->bytes_built(), done);
  }
  return work;
}

nlohmann::json EventManagerApp::results() const {
  const std::uint64_t built = events_built_->value();
  const std::uint64_t bytes = bytes_built_->value();
  const std::int64_t from = enabled_ns_.load(std::memory_order_relaxed);
  const std::int64_t to = last_built_ns_.load(std::memory_order_relaxed);
  const double seconds = from > 0 && to > from ? static_cast<double>(to - from) * 1e-9 : 0.0;
  nlohmann::json lost = nlohmann::json::array();
  nlohmann::json rejoined = nlohmann::json::array();
  {
    const std::lock_guard lock(lost_mutex_);
    for (const auto& id : lost_bus_) lost.push_back(id);
    for (const auto& id : rejoined_bus_) rejoined.push_back(id);
  }
  const std::uint64_t triggered = events_triggered_->value();
  const std::uint64_t incomplete = events_incomplete_->value();
  double rate_hz = seconds > 0 ? static_cast<double>(built + incomplete) / seconds : 0.0;
  double mb_s = seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0.0;
  double stddev_mb_s = 0;
  if (const auto steady = summarize(sampler_.samples())) {
    rate_hz = steady->messages_per_s;
    mb_s = steady->mb_s;
    stddev_mb_s = steady->stddev_mb_s;
  }
  return {
      {"events_triggered", triggered},
      {"events_built", built},
      {"events_incomplete", incomplete},
      {"events_in_flight", triggered - std::min(triggered, built + incomplete)},
      {"events_lost", static_cast<std::uint64_t>(events_lost_->value())},
      {"events_in_doubt", static_cast<std::uint64_t>(events_in_doubt_->value())},
      {"commits_fenced", commits_fenced_->value()},
      {"rejoined_bus", rejoined},
      {"events_reassigned", events_reassigned_->value()},
      {"bytes_built", bytes},
      {"lost_bus", lost},
      {"throttled_ns", role_.figures().throttled_ns},
      {"seconds", seconds},
      {"event_rate_hz", rate_hz},
      {"throughput_mb_s", mb_s},
      {"stddev_mb_s", stddev_mb_s},
      {"samples", sampler_.count()},
  };
}

void EventManagerApp::fold_results(nlohmann::json& run, const std::string& /*id*/,
                                   const nlohmann::json& app) {
  if (!run.is_object()) run = nlohmann::json::object();
  for (const char* key :
       {"events_triggered", "events_built", "events_incomplete", "events_lost", "events_in_doubt",
        "events_reassigned", "bytes_built", "event_rate_hz", "throughput_mb_s"}) {
    if (app.contains(key)) run[key] = app[key];
  }
  run["lost_bus"] = app.contains("lost_bus") ? app["lost_bus"] : nlohmann::json::array();
  run["rejoined_bus"] =
      app.contains("rejoined_bus") ? app["rejoined_bus"] : nlohmann::json::array();
}

}  // namespace daqflow::apps::evb
