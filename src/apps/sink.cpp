#include "sink.hpp"

#include <algorithm>

#include "daqflow/wire/header.hpp"

namespace daqflow::apps {

namespace {

// A `source` application's message count from its parameters; 0 = unlimited or not a source.
std::uint64_t source_count(const runtime::ApplicationConfig& app) {
  if (app.type != "source" || !app.params.is_object()) return 0;
  const auto it = app.params.find("count");
  if (it == app.params.end() || !it->is_number_integer()) return 0;
  const auto n = it->get<std::int64_t>();
  return n > 0 ? static_cast<std::uint64_t>(n) : 0;
}

bool sends_to(const runtime::ApplicationConfig& app, const std::string& id) {
  if (app.type != "source" || !app.params.is_object()) return false;
  const auto it = app.params.find("destinations");
  if (it == app.params.end() || !it->is_array()) return false;
  return std::any_of(it->begin(), it->end(),
                     [&id](const nlohmann::json& v) { return v.is_string() && v == id; });
}

}  // namespace

Result<void> Sink::setup(runtime::AppContext& ctx, const SinkSettings& s) {
  interval_ms_ = s.sample_interval_ms;
  if (!parse_verify(s.verify, verify_)) {
    return runtime::param_error("verify", "'" + s.verify + "' is unknown");
  }
  if (auto r = take_sources(ctx, s.sources); !r) return r;
  auto endpoint = ctx.endpoint();
  if (!endpoint) return endpoint.error().context("endpoint");
  endpoint_ = *endpoint;
  clock_ = &ctx.clock();

  runtime::MetricsRegistry& m = ctx.metrics();
  messages_in_ = &m.counter("messages_in", "messages received");
  bytes_in_ = &m.counter("bytes_in", "payload bytes received", runtime::Unit::bytes);
  errors_sequence_ = &m.counter(
      "errors_sequence", "messages out of sequence or from an application not among the sources");
  errors_pattern_ = &m.counter("errors_pattern", "messages whose payload pattern is wrong");
  rate_gauge_ = &m.gauge("throughput_mb_s", "received MB/s (10^6 bytes) over the last sample",
                         runtime::Unit::megabytes_per_second);

  bytes_ = messages_ = 0;
  published_ = {};
  completed_ = 0;
  sampler_.reset(interval_ms_ * 1'000'000);
  enabled_ns_.store(0);
  enabled_at_ns_.store(0);
  add_handlers();
  return ok();
}

Result<void> Sink::take_sources(runtime::AppContext& ctx, const std::vector<std::string>& listed) {
  const runtime::ClusterConfig& cluster = ctx.cluster();
  ids_ = detail::application_ids(cluster);
  sources_.assign(ids_.size(), SourceState{});
  restricted_ = !listed.empty();
  // Sources whose streams must end before the sink is finished; one unlimited source (or none
  // known) means the sink runs until halted.
  std::vector<AppIndex> expected;
  if (restricted_) {
    auto indexes = ctx.indexes_of("sources", listed);
    if (!indexes) return indexes.error();
    for (const AppIndex i : *indexes) {
      if (i >= sources_.size()) {
        return runtime::param_error("sources", "index out of the address table");
      }
      sources_[i].allowed = true;
      expected.push_back(i);
    }
  } else {
    for (auto& s : sources_) s.allowed = true;
    for (const auto& app : cluster.applications) {
      if (sends_to(app, id())) expected.push_back(app.index);
    }
  }
  const bool finite =
      !expected.empty() && std::all_of(expected.begin(), expected.end(), [&](AppIndex i) {
        return i < cluster.applications.size() && source_count(cluster.applications[i]) > 0;
      });
  awaited_ = 0;
  if (finite) {
    for (const AppIndex i : expected) {
      if (!sources_[i].awaited) ++awaited_;
      sources_[i].awaited = true;
    }
  }
  return ok();
}

void Sink::add_handlers() {
  // Data only: a message of another type is rejected (counted), and the stream it broke shows
  // as a sequence error.
  runtime::DataPath& path = data_path();
  path.on(wire::MessageType::data, [this](Completion& c, std::int64_t) { on_message(c); });
  path.on_peer_gone([this](AppIndex peer, std::string_view reason, bool) {
    // A source closing in order has halted: normal.
    if (!reason.empty() && !halting()) {
      fail("connection with '" + detail::id_of(ids_, peer) + "' failed: " + std::string(reason));
    }
  });
  path.on_work([this](std::int64_t now) { return work(now); });
  // Awake in time for the next sample even when no data comes.
  path.at([this] { return sampler_.started() ? sampler_.next_due_ns() : 0; });
}

Result<void> Sink::enable() {
  enabled_at_ns_.store(clock_->now_ns(), std::memory_order_release);
  return ok();
}

Result<void> Sink::suspend() {
  const std::int64_t at = enabled_at_ns_.exchange(0, std::memory_order_acq_rel);
  if (at != 0) enabled_ns_.fetch_add(clock_->now_ns() - at, std::memory_order_acq_rel);
  return ok();
}

Result<void> Sink::resume() {
  return enable();
}

void Sink::begin_halt() {
  (void)suspend();
}

void Sink::release() {
  endpoint_ = nullptr;
}

std::size_t Sink::check_pattern(const transport::Message& m, std::uint64_t seq,
                                AppIndex peer) const {
  if (m.segment_count == 1 && verify_ == Verify::ends) {  // one piece, the common case: no walk
    const std::span<const std::byte> bytes = m.segments[0].bytes();
    return check_ends(bytes, 0, bytes.size(), seq, peer);
  }
  const std::size_t total = m.size();
  std::size_t offset = 0;
  for (const transport::Segment& s : m.pieces()) {
    const std::span<const std::byte> bytes = s.bytes();
    const std::size_t bad = verify_ == Verify::full ? check_full(bytes, offset, seq, peer)
                                                    : check_ends(bytes, offset, total, seq, peer);
    if (bad != kPatternOk) return bad;
    offset += bytes.size();
  }
  return kPatternOk;
}

void Sink::on_message(Completion& c) {
  const AppIndex peer = c.peer;
  const std::uint64_t seq = c.message.tag;
  const std::size_t size = c.message.size();
  ++messages_;
  bytes_ += size;
  if (peer >= sources_.size() || !sources_[peer].allowed) {
    errors_sequence_->add_single_writer();
    if (!failed())
      fail("message " + std::to_string(seq) + " from '" + detail::id_of(ids_, peer) +
           "', which is not among the sources of '" + id() + "'");
    return;
  }
  // Every error is counted; the reason is built only for the first, the one the host keeps.
  SourceState& s = sources_[peer];
  if (seq != s.expected) {
    errors_sequence_->add_single_writer();
    if (!failed())
      fail("sequence error from '" + detail::id_of(ids_, peer) + "': expected message " +
           std::to_string(s.expected) + ", got " + std::to_string(seq));
  }
  s.expected = seq + 1;
  if (const std::size_t bad = check_pattern(c.message, seq, peer); bad != kPatternOk) {
    errors_pattern_->add_single_writer();
    if (!failed())
      fail("pattern error (verify: " + std::string(to_string(verify_)) + ") from '" +
           detail::id_of(ids_, peer) + "' in message " + std::to_string(seq) + " of " +
           std::to_string(size) + " bytes, at byte " + std::to_string(bad));
  }
  if ((c.message.flags & wire::kFlagLast) != 0 && s.awaited && !s.complete) {
    s.complete = true;
    if (++completed_ == awaited_) set_finished();
  }
}

// The round's messages into the metrics (one update each per round) and the sampler.
int Sink::work(std::int64_t now) {
  if (messages_ != published_.messages) {
    messages_in_->add_single_writer(messages_ - published_.messages);
    bytes_in_->add_single_writer(bytes_ - published_.bytes);
    sampler_.start(now, published_.bytes, published_.messages);
    published_ = {bytes_, messages_};
  }
  if (sampler_.tick(now, bytes_, messages_)) {
    const auto s = sampler_.samples();
    const ThroughputSample& a = s[s.size() - 2];
    const ThroughputSample& b = s[s.size() - 1];
    const double dt = static_cast<double>(b.t_ns - a.t_ns) / 1e9;
    rate_gauge_->set(dt > 0 ? static_cast<double>(b.bytes - a.bytes) / 1e6 / dt : 0.0);
  }
  return 0;  // the messages were the round's work
}

nlohmann::json Sink::results() const {
  const std::uint64_t bytes = bytes_in_->value();
  const std::uint64_t messages = messages_in_->value();
  nlohmann::json r = {
      {"bytes", bytes},
      {"messages", messages},
      {"sample_interval_ms", interval_ms_},
      {"errors_sequence", errors_sequence_->value()},
      {"errors_pattern", errors_pattern_->value()},
  };
  const auto samples = sampler_.samples();
  if (const auto s = summarize(samples)) {
    r["throughput_mb_s"] = s->mb_s;
    r["messages_per_s"] = s->messages_per_s;
    r["stddev_mb_s"] = s->stddev_mb_s;
    r["samples"] = s->intervals;
    r["seconds"] = s->seconds;
    r["window"] = "sampled";
    return r;
  }
  // Too short a run for sampling: the average over the whole time the sink was enabled.
  std::int64_t enabled_ns = enabled_ns_.load(std::memory_order_acquire);
  const std::int64_t at = enabled_at_ns_.load(std::memory_order_acquire);
  if (at != 0 && clock_ != nullptr) enabled_ns += clock_->now_ns() - at;
  const double seconds = static_cast<double>(enabled_ns) / 1e9;
  r["throughput_mb_s"] = seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0.0;
  r["messages_per_s"] = seconds > 0 ? static_cast<double>(messages) / seconds : 0.0;
  r["stddev_mb_s"] = 0.0;
  r["samples"] = samples.empty() ? 0 : samples.size() - 1;
  r["seconds"] = seconds;
  r["window"] = "enabled";
  return r;
}

void Sink::fold_results(nlohmann::json& run, const std::string& id, const nlohmann::json& app) {
  if (!run.is_object()) run = nlohmann::json::object();
  auto number = [](const nlohmann::json& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  const double mb_s = app.is_object() ? number(app, "throughput_mb_s") : 0.0;
  const double per_s = app.is_object() ? number(app, "messages_per_s") : 0.0;
  run["throughput_mb_s"] = number(run, "throughput_mb_s") + mb_s;
  run["messages_per_s"] = number(run, "messages_per_s") + per_s;
  run["sinks"][id] = {{"throughput_mb_s", mb_s}, {"messages_per_s", per_s}};
}

}  // namespace daqflow::apps
