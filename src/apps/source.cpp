#include "source.hpp"

#include <algorithm>

#include "daqflow/core/clock.hpp"
#include "daqflow/wire/header.hpp"

namespace daqflow::apps {

namespace {

// While the pool is dry (a receiver still holds our buffers) no completion announces their
// return, so the agent only naps instead of blocking for its full idle timeout.
constexpr std::int64_t kStarvedNapNs = 100'000;

}  // namespace

runtime::HostNeeds Source::host_needs(const runtime::ApplicationConfig& app,
                                      const runtime::ClusterConfig& cluster) {
  std::uint32_t depth = app.params.value("pipeline_depth", std::uint32_t{0});
  if (depth == 0) depth = cluster.transports.endpoint.pipeline_depth;
  const auto size = std::max<std::uint64_t>(app.params.value("message_size", std::uint64_t{0}), 1);
  const auto it = app.params.find("destinations");
  const std::size_t destinations = it != app.params.end() && it->is_array() ? it->size() : 0;
  runtime::HostNeeds needs;
  needs.send_pool_bytes = size * send_buffers(depth, destinations);
  return needs;
}

Result<void> Source::setup(runtime::AppContext& ctx, const SourceSettings& s) {
  self_ = ctx.self().index;
  clock_ = &ctx.clock();
  message_size_ = s.message_size;
  depth_ = s.pipeline_depth;
  count_ = s.count;
  if (!parse_verify(s.verify, verify_)) {
    return runtime::param_error("verify", "'" + s.verify + "' is unknown");
  }
  fill_ = s.fill;
  if (fill_ && verify_ == Verify::full) {
    return runtime::param_error("fill", "applies to verify: ends (full writes every byte already)");
  }
  const transport::EndpointOptions& t = ctx.cluster().transports.endpoint;
  if (message_size_ > t.max_message_size) {
    return runtime::param_error("message_size",
                                std::to_string(message_size_) +
                                    " bytes exceeds transports.max_message_size (" +
                                    std::to_string(t.max_message_size) +
                                    "); raise max_message_size or send smaller messages");
  }
  if (depth_ == 0) depth_ = t.pipeline_depth;
  if (depth_ == 0) return runtime::param_error("pipeline_depth", "transports.pipeline_depth is 0");
  if (auto r = take_destinations(ctx, s.destinations); !r) return r;
  if (auto r = open_endpoint(ctx); !r) return r;
  add_metrics(ctx.metrics());
  cursor_ = 0;
  total_in_flight_ = 0;
  done_ = {};
  first_post_ns_.store(0);
  last_done_ns_.store(0);
  add_handlers();
  return ok();
}

Result<void> Source::take_destinations(runtime::AppContext& ctx,
                                       const std::vector<std::string>& names) {
  if (names.empty()) return runtime::param_error("destinations", "needs at least one destination");
  auto indexes = ctx.indexes_of("destinations", names);
  if (!indexes) return indexes.error();
  ids_ = detail::application_ids(ctx.cluster());
  slot_of_.assign(ids_.size(), -1);
  dests_.clear();
  dests_.reserve(indexes->size());
  for (std::size_t i = 0; i < indexes->size(); ++i) {
    const AppIndex index = (*indexes)[i];
    if (index == self_) {
      return runtime::param_error("destinations", "'" + id() + "' cannot send to itself");
    }
    if (index >= slot_of_.size()) {
      return runtime::param_error("destinations", "index out of the address table");
    }
    if (slot_of_[index] >= 0) {
      return runtime::param_error("destinations", "'" + names[i] + "' is listed twice");
    }
    slot_of_[index] = static_cast<std::int32_t>(dests_.size());
    dests_.emplace_back();
    dests_.back().index = index;
  }
  return ok();
}

Result<void> Source::open_endpoint(runtime::AppContext& ctx) {
  transport::EndpointOptions options = ctx.endpoint_options();
  options.pipeline_depth = depth_;
  // The source counts its sends and nothing else: one completion per run of them.
  options.coalesce_send_done = true;
  auto endpoint = ctx.endpoint(&options);
  if (!endpoint) return endpoint.error().context("endpoint");
  endpoint_ = *endpoint;

  // A send completes when the receiver takes the message (shm, inproc: its descriptor), and the
  // buffer comes back only when the receiver drops it: twice the pipeline, so that the buffers
  // the receivers still read do not starve the pipeline (1 MiB over shm with every byte checked:
  // 11 GB/s with depth + 2 buffers, 14-19 GB/s with twice as many).
  const std::size_t buffers = send_buffers(depth_, dests_.size());
  // In the transport's own memory where it has some (shm: a shared segment), so that a message
  // is written once, here, and read in place by the sink.
  auto pool =
      data_path().send_pool(id() + ".send", std::max<std::uint32_t>(message_size_, 1), buffers);
  if (!pool) return pool.error();
  pool_ = *pool;
  pool_bound_ = false;
  scratch_.clear();
  if (message_size_ > 0 && message_size_ <= endpoint_->copy_limit()) scratch_.resize(message_size_);

  for (const auto& d : dests_) {
    auto connected = endpoint_->connect(d.index);
    if (!connected) {
      return connected.error().context("connecting to '" + detail::id_of(ids_, d.index) + "'");
    }
  }
  return ok();
}

void Source::add_metrics(runtime::MetricsRegistry& m) {
  messages_out_ = &m.counter("messages_out", "messages sent and completed");
  bytes_out_ = &m.counter("bytes_out", "payload bytes sent and completed", runtime::Unit::bytes);
  back_pressured_ = &m.counter(
      "back_pressured", "post attempts refused because the pipeline or the send pool was full");
  in_flight_gauge_ = &m.gauge("in_flight", "messages posted and not yet completed");
}

void Source::add_handlers() {
  runtime::DataPath& path = data_path();
  // Sinks send nothing: whatever arrives is rejected (no handler).
  path.on_sent([this](const Completion& c) { on_sent(c); });
  path.on_peer_gone([this](AppIndex peer, std::string_view reason, bool) {
    if (Destination* d = destination_of(peer)) {
      lose(*d, reason.empty() ? std::string("closed the connection while the source was sending")
                              : "failed: " + std::string(reason));
    }
  });
  path.on_work([this](std::int64_t now) { return work(now); });
  // While the pool is dry no completion announces the buffers' return: a nap, not a sleep.
  path.at([this] { return starved_ ? clock_->now_ns() + kStarvedNapNs : 0; });
  path.drained_when([this] { return total_in_flight_ == 0; });
}

void Source::release() {
  for (auto& d : dests_) {
    d.message.clear();
    d.staged = false;
  }
  endpoint_ = nullptr;
  pool_ = nullptr;
}

Source::Destination* Source::destination_of(AppIndex peer) {
  if (peer >= slot_of_.size() || slot_of_[peer] < 0) return nullptr;
  return &dests_[static_cast<std::size_t>(slot_of_[peer])];
}

void Source::lose(Destination& d, const std::string& why) {
  if (!d.dead) {
    d.dead = true;
    total_in_flight_ -= d.in_flight;
    d.in_flight = 0;
    d.message.clear();
    d.staged = false;
  }
  if (!winding_down()) fail("destination '" + detail::id_of(ids_, d.index) + "' " + why);
}

// One completion may stand for a run of messages (coalesce_send_done, in configure()).
void Source::on_sent(const Completion& c) {
  if (Destination* d = destination_of(c.peer)) {
    const std::uint64_t k = std::min<std::uint64_t>(c.count, d->in_flight);
    d->in_flight -= static_cast<std::uint32_t>(k);
    total_in_flight_ -= k;
  }
  done_.messages += c.count;
  done_.bytes += c.size;
}

// The round's completions into the metrics (one update each per round), and the end of a
// counted stream.
void Source::publish_done() {
  if (done_.messages > 0) {
    messages_out_->add_single_writer(done_.messages);
    bytes_out_->add_single_writer(done_.bytes);
    last_done_ns_.store(core::monotonic_ns(), std::memory_order_relaxed);
    done_ = {};
  }
  if (count_ > 0 && !finished() && total_in_flight_ == 0 &&
      std::all_of(dests_.begin(), dests_.end(),
                  [this](const Destination& x) { return x.next_seq >= count_; })) {
    set_finished();
  }
}

bool Source::stage(Destination& d) {
  const std::uint64_t seq = d.next_seq;
  if (message_size_ > 0) {
    core::Buffer buffer = pool_->acquire();
    if (!buffer) return false;
    write_payload({buffer.data(), message_size_}, seq);
    d.message.add(std::move(buffer), 0, message_size_);
  }
  d.message.type = wire::MessageType::data;
  d.message.tag = seq;
  d.message.flags = flags_of(seq);
  d.staged = true;
  return true;
}

transport::SendStatus Source::post_copy(Destination& d) {
  const std::uint64_t seq = d.next_seq;
  const std::span<std::byte> payload{scratch_};
  write_payload(payload, seq);
  return endpoint_->post_copy(d.index, {wire::MessageType::data, flags_of(seq), seq, payload});
}

void Source::write_payload(std::span<std::byte> payload, std::uint64_t seq) const {
  if (verify_ == Verify::full || fill_) fill_full(payload, 0, seq, self_);
  if (verify_ == Verify::ends) write_ends(payload, 0, message_size_, seq, self_);
}

std::uint16_t Source::flags_of(std::uint64_t seq) const {
  return (count_ > 0 && seq + 1 == count_) ? wire::kFlagLast : 0;
}

void Source::on_send_failure(Destination& d, SendStatus status) {
  switch (status) {
    case SendStatus::back_pressure:
      back_pressured_->add_single_writer();
      break;
    case SendStatus::not_connected:
      break;  // still connecting: try again next round
    case SendStatus::closed:
      lose(d, "is closed");
      break;
    case SendStatus::too_large:
    case SendStatus::invalid:
    case SendStatus::ok:
      lose(d, "refused a message of " + std::to_string(message_size_) +
                  " bytes: " + std::string(transport::to_string(status)));
      break;
  }
}

int Source::post_round() {
  int posted = 0;
  const std::size_t n = dests_.size();
  bool starved = false;
  for (std::size_t k = 0; k < n && !starved; ++k) {
    Destination& d = dests_[(cursor_ + k) % n];
    while (!d.dead && d.in_flight < depth_ && (count_ == 0 || d.next_seq < count_)) {
      SendStatus status;
      if (!scratch_.empty()) {
        status = post_copy(d);
      } else if (d.staged || stage(d)) {
        status = endpoint_->post_send(d.index, d.message);
      } else {
        back_pressured_->add_single_writer();
        starved = true;
        break;
      }
      if (status != SendStatus::ok) {
        on_send_failure(d, status);
        break;
      }
      d.message.clear();
      d.staged = false;
      ++d.next_seq;
      ++d.in_flight;
      ++total_in_flight_;
      ++posted;
    }
  }
  cursor_ = n > 0 ? (cursor_ + 1) % n : 0;
  starved_ = starved;
  if (posted > 0 && first_post_ns_.load(std::memory_order_relaxed) == 0) {
    first_post_ns_.store(core::monotonic_ns(), std::memory_order_relaxed);
  }
  return posted;
}

int Source::work(std::int64_t /*now*/) {
  if (!pool_bound_) {
    // Only this thread takes buffers from the pool: its releases need no locked instruction.
    pool_->bind_to_this_thread();
    pool_bound_ = true;
  }
  publish_done();
  int work = 0;
  if (producing()) {
    work += post_round();
  } else {
    starved_ = false;
  }
  in_flight_gauge_->set(static_cast<double>(total_in_flight_));
  return work;
}

nlohmann::json Source::results() const {
  const std::uint64_t bytes = bytes_out_->value();
  const std::int64_t from = first_post_ns_.load(std::memory_order_relaxed);
  const std::int64_t to = last_done_ns_.load(std::memory_order_relaxed);
  const double seconds = (from > 0 && to > from) ? static_cast<double>(to - from) / 1e9 : 0.0;
  return {
      {"messages", messages_out_->value()},
      {"bytes", bytes},
      {"message_size", message_size_},
      {"pipeline_depth", depth_},
      {"destinations", dests_.size()},
      {"verify", std::string(to_string(verify_))},
      {"fill", fill_},
      {"seconds", seconds},
      {"throughput_mb_s", seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0.0},
  };
}

}  // namespace daqflow::apps
