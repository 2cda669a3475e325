#include "worker_app.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "daqflow/apps/farm/dispatcher.hpp"
#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/evb.hpp"
#include "python_filter.hpp"

namespace daqflow::apps::farm {

namespace {

// Events a worker can hold: far above any sensible window (the SFC's tokens bound them).
constexpr std::size_t kMaxHeld = 256;
// Decision buffers: the one being decided, those the transport still sends (its pipeline), the
// heartbeats and tokens.
constexpr std::size_t kDecisionBuffers = 32;

core::DistSpec time_spec(const TimeSettings& t) {
  core::DistSpec s;
  s.dist = *core::parse_dist(t.dist);  // one_of: known
  s.mean = t.mean_us;
  s.sd = t.sd_us;
  return s;
}

}  // namespace

Worker::~Worker() {
  unload_plugin();
}

Result<void> Worker::setup(runtime::AppContext& ctx, const WorkerSettings& s) {
  clock_ = &ctx.clock();
  output_bytes_ = s.output_bytes;
  heartbeat_ns_ = s.heartbeat_ms * 1'000'000;
  auto index = ctx.index_of(s.sfc);
  if (!index) return index.error().context("parameter 'sfc'");
  sfc_ = *index;
  WorkerQueue::Model model;
  model.accept_fraction = s.accept_fraction;
  model.trigger_bits = s.trigger_bits;
  model.output_bytes = s.output_bytes;
  model.accept_time_us = time_spec(s.accept_time);
  model.reject_time_us = time_spec(s.reject_time);
  model.seed = s.seed ^ (std::uint64_t{ctx.self().index} * core::kGolden);
  queue_ = WorkerQueue(kMaxHeld, model);
  ids_ = detail::application_ids(ctx.cluster());
  if (auto r = load_processing(s.processing); !r)
    return r.error().context("parameter 'processing'");

  if (auto r = open_endpoint(ctx); !r) return r;
  heartbeat_seq_ = 0;
  next_heartbeat_ns_ = 0;
  add_metrics(ctx.metrics());
  add_handlers();
  return ok();
}

Result<void> Worker::open_endpoint(runtime::AppContext& ctx) {
  // Receive buffers are as large as the largest message and filled in at Configure: an SFC
  // with its generator sends nothing larger than its largest event.
  transport::EndpointOptions options = ctx.endpoint_options();
  const runtime::ApplicationConfig& sfc_app = ctx.cluster().applications[sfc_];
  if (sfc_app.type == "sfc" && sfc_app.params.value("inputs", nlohmann::json::array()).empty()) {
    const std::uint64_t largest =
        sfc_app.params.value("event_size", nlohmann::json::object()).value("max", 0) +
        std::uint64_t{wire::kFarmEventSize};
    options.max_message_size = static_cast<std::uint32_t>(std::min<std::uint64_t>(
        options.max_message_size,
        std::max<std::uint64_t>({largest, wire::kDecisionSize + output_bytes_, 4096})));
  }
  auto endpoint = detail::open_endpoint(ctx, {{"SFC", {&sfc_, 1}}}, &options);
  if (!endpoint) return endpoint.error();
  endpoint_ = *endpoint;
  auto pool = data_path().send_pool(id() + ".decisions", wire::kDecisionSize + output_bytes_,
                                    kDecisionBuffers);
  if (!pool) return pool.error();
  pool_ = *pool;
  // Model output: the same bytes for every event but its first 8, the event number.
  if (plugin_.process == nullptr) {
    std::vector<core::Buffer> all;
    all.reserve(kDecisionBuffers);
    for (std::size_t i = 0; i < kDecisionBuffers; ++i) {
      all.push_back(pool_->acquire());
      for (std::uint32_t j = 0; j < output_bytes_; ++j) {
        all.back().data()[wire::kDecisionSize + j] = static_cast<std::byte>((j * 131u + 7u) & 0xff);
      }
    }
  }
  return ok();
}

void Worker::add_metrics(runtime::MetricsRegistry& m) {
  events_in_ = &m.counter("events_in", "events received from the SFC");
  bytes_in_ = &m.counter("bytes_in", "bytes of events received", runtime::Unit::bytes);
  events_accepted_ = &m.counter("events_accepted", "events decided: accepted");
  events_rejected_ = &m.counter("events_rejected", "events decided: rejected");
  events_failed_ = &m.counter(
      "events_failed", "events the plugin failed on, rejected (processing.on_error: reject)");
  events_dropped_ =
      &m.counter("events_dropped",
                 "events dropped undecided: fenced by the SFC, or sent under an older epoch");
  events_pushed_ = &m.counter("events_pushed", "events pushed with no answer wanted (push policy)");
  busy_ns_ = &m.counter("busy_ns", "time spent processing", runtime::Unit::none);
  messages_malformed_ = &m.counter("messages_malformed", "malformed messages dropped");
  fences_ = &m.counter("fences", "fences received: the SFC had declared this worker lost");
}

void Worker::add_handlers() {
  runtime::DataPath& path = data_path();
  path.count_rejected_in(*messages_malformed_);
  path.on(wire::MessageType::farm_event, [this](Completion& c, std::int64_t) { on_event(c); });
  path.on(wire::MessageType::fence, [this](Completion& c, std::int64_t) { on_fence(c); });
  path.on_peer_gone([this](AppIndex peer, std::string_view reason, bool) {
    if (peer != sfc_) return;
    if (reason.empty()) {
      // The SFC halts before its workers: at the end of a run this is the normal goodbye.
      spdlog::info("{}: the SFC '{}' closed its connection", id(), detail::id_of(ids_, peer));
    } else if (!winding_down()) {
      spdlog::warn("{}: the connection to the SFC '{}' failed: {}", id(), detail::id_of(ids_, peer),
                   reason);
    }
  });
  path.at([this] { return queue_.token_due() ? 0 : next_heartbeat_ns_; },
          [this](std::int64_t now) { send_heartbeat(now); });
  path.at([this] {
    const WorkerQueue::Held* h = queue_.head();
    return h != nullptr ? h->done_ns : 0;
  });
  path.on_work([this](std::int64_t now) { return decide(now); });
}

Result<void> Worker::load_processing(const WorkerSettings::Processing& p) {
  if (p.kind == "model") {
    for (const auto& [key, value] : {std::pair{"library", &p.library}, {"module", &p.module}}) {
      if (!value->empty()) return Error(fmt::format("'{}' is set, but kind is model", key));
    }
    return ok();
  }
  if (p.kind == "plugin") {
    if (p.library.empty()) return Error("kind plugin needs 'library', the plugin's path");
    if (auto r = load_plugin(p.library, p.config); !r) return r.error().context("library");
  } else {
    auto host = python_filter_host({p.module, p.function, p.python, p.path});
    if (!host) return host.error();
    if (auto r = load_plugin(host->library, host->config); !r) return r;
  }
  plugin_.reject_on_error = p.on_error == "reject";
  return ok();
}

Result<void> Worker::load_plugin(const std::string& path, const std::string& config) {
  auto library = core::SharedLibrary::open(path);
  if (!library) return library.error();
  const auto abi = library->function<daqflow_farm_abi_fn>("daqflow_farm_abi");
  const auto process = library->function<daqflow_farm_process_fn>("daqflow_farm_process");
  if (abi == nullptr || process == nullptr) {
    return Error("'" + path + "' does not export daqflow_farm_abi and daqflow_farm_process");
  }
  if (const int found = abi(); found != DAQFLOW_FARM_ABI) {
    return Error("'" + path + "' is built for farm ABI " + std::to_string(found) + ", not " +
                 std::to_string(DAQFLOW_FARM_ABI));
  }
  const auto init = library->function<daqflow_farm_init_fn>("daqflow_farm_init");
  plugin_.fini = library->function<daqflow_farm_fini_fn>("daqflow_farm_fini");
  plugin_.error = library->function<daqflow_farm_error_fn>("daqflow_farm_error");
  plugin_.process = process;
  plugin_.library = std::move(*library);
  if (init != nullptr) {
    plugin_.state = init(config.c_str());
    if (plugin_.state == nullptr) {
      const std::string why = plugin_error();
      unload_plugin();
      return Error("'" + path + "': daqflow_farm_init refused the configuration '" + config + "'" +
                   (why.empty() ? "" : ": " + why));
    }
  }
  return ok();
}

std::string Worker::plugin_error() const {
  if (plugin_.error == nullptr) return {};
  const char* text = plugin_.error(plugin_.state);
  return text != nullptr ? text : "";
}

void Worker::unload_plugin() {
  if (!plugin_.library) return;
  if (plugin_.fini != nullptr && plugin_.state != nullptr) plugin_.fini(plugin_.state);
  plugin_ = Plugin{};  // closes the library after fini
}

void Worker::release() {
  queue_.clear();
  unload_plugin();
  endpoint_ = nullptr;
  pool_ = nullptr;
}

bool Worker::send_token() {
  core::Buffer b = pool_->acquire();
  if (!b) return false;
  wire::Decision d;
  d.epoch = queue_.epoch();
  wire::encode(d, std::span<std::byte, wire::kDecisionSize>(b.data(), wire::kDecisionSize));
  transport::Message m;
  m.type = wire::MessageType::decision;
  m.add(std::move(b), 0, wire::kDecisionSize);
  return endpoint_->post_send(sfc_, m) == SendStatus::ok;
}

void Worker::send_heartbeat(std::int64_t now) {
  core::Buffer b = pool_->acquire();
  if (!b) return;
  wire::Heartbeat h;
  h.sender = endpoint_->self();
  h.sequence = heartbeat_seq_;
  wire::encode(h, std::span<std::byte, wire::kHeartbeatSize>(b.data(), wire::kHeartbeatSize));
  transport::Message m;
  m.type = wire::MessageType::heartbeat;
  m.tag = heartbeat_seq_;
  m.add(std::move(b), 0, wire::kHeartbeatSize);
  if (endpoint_->post_send(sfc_, m) == SendStatus::ok) {
    ++heartbeat_seq_;
    next_heartbeat_ns_ = now + heartbeat_ns_;
  }
}

void Worker::on_event(Completion& c) {
  if (c.peer != sfc_ || c.message.segment_count == 0) {
    data_path().reject();
    return;
  }
  wire::FarmEvent e;
  const auto status = wire::decode(c.message.segments[0].bytes(), c.size, e);
  if (status != wire::PayloadStatus::ok) {
    data_path().reject();
    spdlog::warn("{}: a malformed event from the SFC, dropped: {}", id(), wire::to_string(status));
    return;
  }
  switch (queue_.arrive(e, c.message)) {
    case WorkerQueue::Arrival::held:
      events_in_->add_single_writer();
      bytes_in_->add_single_writer(e.size);
      break;
    case WorkerQueue::Arrival::pushed:
      events_pushed_->add_single_writer();
      bytes_in_->add_single_writer(e.size);
      break;
    case WorkerQueue::Arrival::stale:
      events_dropped_->add_single_writer();
      break;
    case WorkerQueue::Arrival::full:
      fail("the SFC sent more events than a worker holds (" + std::to_string(kMaxHeld) +
           "): lower its window");
      break;
  }
}

void Worker::on_fence(const Completion& c) {
  wire::Fence f;
  if (c.peer != sfc_ || c.message.segment_count == 0 ||
      wire::decode(c.message.segments[0].bytes(), f) != wire::PayloadStatus::ok) {
    data_path().reject();
    return;
  }
  if (!queue_.fenced_by(f.epoch)) return;
  const std::size_t dropped = queue_.fence(f.epoch);
  events_dropped_->add_single_writer(dropped);
  spdlog::warn(
      "{}: the SFC declared this worker lost; {} held event(s) dropped, back under epoch {}", id(),
      dropped, f.epoch);
  fences_->add_single_writer();
}

// Decides on the event at the head: the plugin now, the model by drawing its time.
bool Worker::start(WorkerQueue::Held& h, std::int64_t now) {
  core::Buffer output = pool_->acquire();
  if (!output) return false;
  if (plugin_.process == nullptr) {
    const std::int64_t ns = queue_.decide_by_model(h, std::move(output), now);
    busy_ns_->add_single_writer(static_cast<std::uint64_t>(ns));
    return true;
  }
  h.output = std::move(output);
  if (!decide_by_plugin(h, h.output.data() + wire::kDecisionSize)) return false;
  wire::encode(h.decision,
               std::span<std::byte, wire::kDecisionSize>(h.output.data(), wire::kDecisionSize));
  return true;
}

bool Worker::decide_by_plugin(WorkerQueue::Held& h, std::byte* out) {
  wire::Decision& d = h.decision;
  d = wire::Decision{};
  d.event = h.event.event;
  d.slot = h.event.slot;
  d.epoch = h.event.epoch;
  // Byte-stream transports deliver one segment; inproc the SFC's two (descriptor, event).
  const transport::Message& m = h.message;
  const std::byte* data = nullptr;
  if (m.segment_count == 1) {
    data = m.segments[0].bytes().data() + wire::kFarmEventSize;
  } else if (m.segment_count == 2 && m.segments[0].length == wire::kFarmEventSize) {
    data = m.segments[1].bytes().data();
  } else {
    fail("an event in " + std::to_string(m.segment_count) +
         " segments: the plugin needs it contiguous");
    return false;
  }
  daqflow_farm_event event{h.event.event, h.event.flags, data, h.event.size};
  daqflow_farm_decision decision{};
  decision.output = out;
  decision.output_capacity = output_bytes_;
  const std::int64_t t0 = clock_->now_ns();
  const int rc = plugin_.process(plugin_.state, &event, &decision);
  const std::int64_t t1 = clock_->now_ns();
  busy_ns_->add_single_writer(static_cast<std::uint64_t>(t1 - t0));
  if (rc != 0) {
    const std::string why = plugin_error();
    if (!plugin_.reject_on_error) {
      fail(fmt::format("the plugin failed on event {} (returned {}){}", h.event.event, rc,
                       why.empty() ? "" : ":\n" + why));
      return false;
    }
    // Counted and rejected; the first failures are logged whole, then one in a thousand.
    const std::uint64_t failed = events_failed_->value();
    if (failed < 10 || failed % 1000 == 0) {
      spdlog::warn("{}: event {} rejected, the plugin failed on it ({} so far){}", id(),
                   h.event.event, failed + 1, why.empty() ? "" : ":\n" + why);
    }
    events_failed_->add_single_writer();
    decision = daqflow_farm_decision{};
  }
  if (decision.output_size > output_bytes_) {
    fail("the plugin wrote " + std::to_string(decision.output_size) +
         " bytes of output, more than output_bytes (" + std::to_string(output_bytes_) + ")");
    return false;
  }
  d.verdict = decision.accept != 0 ? wire::Verdict::accept : wire::Verdict::reject;
  d.trigger_bits = decision.trigger_bits;
  d.output_size =
      d.verdict == wire::Verdict::accept ? static_cast<std::uint32_t>(decision.output_size) : 0;
  h.done_ns = t1;
  return true;
}

int Worker::decide(std::int64_t now) {
  if (failed()) return 0;
  int work = 0;
  if (queue_.token_due() && !halting() && endpoint_->connected(sfc_) && send_token()) {
    queue_.token_sent();
    next_heartbeat_ns_ = now;
    ++work;
  }
  while (WorkerQueue::Held* head = queue_.head()) {
    WorkerQueue::Held& h = *head;
    if (h.done_ns == 0 && !start(h, now)) break;
    now = clock_->now_ns();
    if (now < h.done_ns) break;
    transport::Message m;
    m.type = wire::MessageType::decision;
    m.tag = h.decision.event;
    m.add(h.output.share(), 0, wire::kDecisionSize + h.decision.output_size);
    const SendStatus s = endpoint_->post_send(sfc_, m);
    if (s == SendStatus::back_pressure || s == SendStatus::not_connected) {
      m.clear();
      break;
    }
    m.clear();
    if (s == SendStatus::ok) {
      (h.decision.verdict == wire::Verdict::accept ? events_accepted_ : events_rejected_)
          ->add_single_writer();
    }
    queue_.pop();
    ++work;
  }
  return work;
}

nlohmann::json Worker::results() const {
  if (events_in_ == nullptr) return nlohmann::json::object();
  return {{"events_in", events_in_->value()},
          {"bytes_in", bytes_in_->value()},
          {"events_accepted", events_accepted_->value()},
          {"events_rejected", events_rejected_->value()},
          {"events_failed", events_failed_->value()},
          {"events_dropped", events_dropped_->value()},
          {"events_pushed", events_pushed_->value()},
          {"busy_s", static_cast<double>(busy_ns_->value()) * 1e-9},
          {"fences", fences_->value()},
          {"messages_malformed", messages_malformed_->value()}};
}

}  // namespace daqflow::apps::farm
