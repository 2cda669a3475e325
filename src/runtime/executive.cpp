#include "daqflow/runtime/executive.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "daqflow/runtime/access.hpp"
#include "executive_context.hpp"
#include "history.hpp"
#include "http_api.hpp"
#include "recorder.hpp"

namespace daqflow::runtime {

namespace {}  // namespace

struct Executive::Impl {
  struct Hosted {
    std::unique_ptr<ContextControl> control;
    std::unique_ptr<MetricsHistory> history;
    std::unique_ptr<Recorder> recorder;       // with --record: the sampler writes to it
    std::unique_ptr<HistorySampler> sampler;  // reads control into history: goes first
    std::unique_ptr<ControlApi> api;
    std::unique_ptr<HttpServer> server;
    std::uint16_t port = 0;
  };

  // Declaration order is destruction order reversed: contexts (and the endpoints their
  // applications hold) go before the transports, which go before the address table and the
  // configuration they point into.
  ClusterConfig cluster;
  ExecutiveOptions options;
  transport::AddressTable addresses;
  std::mutex transports_mutex;
  std::map<std::string, std::unique_ptr<transport::Transport>, std::less<>> transports;
  std::vector<Hosted> contexts;

  std::mutex mutex;
  std::condition_variable cv;
  bool shutdown_requested = false;  // guarded by mutex
  bool shutting_down = false;       // guarded by mutex: one wait() does the work
  bool finished = false;            // guarded by mutex
  bool started = false;             // start() succeeded; owner thread only
  // When the lease runs out (options.lease), and when a controller last renewed it; guarded by
  // mutex.
  std::chrono::steady_clock::time_point lease_deadline =
      std::chrono::steady_clock::time_point::max();
  std::optional<std::chrono::steady_clock::time_point> controller_seen;
  std::atomic<bool> stop_requested{false};  // `daqflow stop` asked for the end of the run
  // The run's key (transport::RunIdentity), from the controller's Configure; 0 until one came.
  std::atomic<std::uint64_t> run_key{0};

  void renew_lease() {
    {
      std::lock_guard lock(mutex);
      const auto now = std::chrono::steady_clock::now();
      controller_seen = now;
      if (options.lease.count() != 0) lease_deadline = now + options.lease;
    }
    cv.notify_all();
  }

  nlohmann::json run_state() {
    nlohmann::json state{{"lease_ms", nullptr},
                         {"controller_seen_ms_ago", nullptr},
                         {"stop_requested", stop_requested.load(std::memory_order_relaxed)}};
    if (options.lease.count() != 0) state["lease_ms"] = options.lease.count();
    std::lock_guard lock(mutex);
    if (controller_seen) {
      state["controller_seen_ms_ago"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::steady_clock::now() - *controller_seen)
                                            .count();
    }
    return state;
  }

  Result<std::unique_ptr<transport::Endpoint>> make_endpoint(
      const std::string& name, const transport::EndpointOptions& asked) {
    transport::EndpointOptions o = asked;
    o.run = {cluster.run.number, run_key.load(std::memory_order_acquire)};
    transport::Transport* t = nullptr;
    {
      std::lock_guard lock(transports_mutex);
      auto it = transports.find(name);
      if (it == transports.end()) {
        auto made = transport::make_transport(name, addresses, transport_config());
        if (!made) return made.error();
        spdlog::info("transport {} created", name);
        it = transports.emplace(name, std::move(*made)).first;
      }
      t = it->second.get();
    }
    auto endpoint = t->create_endpoint(o);
    if (!endpoint || cluster.faults.empty()) return endpoint;
    // The configuration's `faults`: never on unless written there, and said loudly when on.
    const transport::Endpoint* plain = endpoint->get();
    const std::string& id = cluster.applications[o.self].id;
    auto wrapped = transport::with_faults(std::move(*endpoint), o, cluster.faults);
    if (!wrapped) return wrapped.error().context(application_named(id));
    if (wrapped->get() != plain) spdlog::warn("application {}: fault injection on its links", id);
    return wrapped;
  }

  // The transports' settings from the cluster configuration.
  [[nodiscard]] transport::BackendOptions transport_config() const {
    transport::BackendOptions c = cluster.transports.backends;
    // Run number and the first context's control port: two clusters running side by side on
    // one host never share a port, so their segment names never clash.
    c.run_tag =
        std::to_string(cluster.run.number) + "." +
        std::to_string(cluster.contexts.empty() ? 0 : cluster.contexts.front().control_port);
    c.mpi.contexts = cluster.mpi_contexts();
    return c;
  }

  void stop_servers() {
    for (Hosted& h : contexts) {
      h.sampler.reset();
      if (h.server) h.server->stop();
    }
  }
};

Executive::Executive(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Executive::~Executive() {
  request_shutdown();
  wait();
}

Result<std::unique_ptr<Executive>> Executive::create(ClusterConfig cluster,
                                                     const std::vector<std::string>& contexts,
                                                     const AppRegistry& registry,
                                                     ExecutiveOptions options) {
  if (contexts.empty()) return Error("no context to host (name one with --context)");
  auto impl = std::make_unique<Impl>();
  impl->cluster = std::move(cluster);
  impl->options = std::move(options);
  impl->addresses = impl->cluster.address_table();
  Impl* raw = impl.get();
  std::unique_ptr<Executive> exec(new Executive(std::move(impl)));

  // The token the control ports ask for (none: anyone who reaches them may change things,
  // which only the loopback allows).
  auto token =
      raw->options.token ? Result<std::string>(*raw->options.token) : access_token(raw->cluster);
  if (!token) return token.error();
  const AccessPolicy access{*token, raw->cluster.access.protect_reads};

  std::vector<std::string> hosted;
  for (const std::string& name : contexts) {
    if (std::find(hosted.begin(), hosted.end(), name) != hosted.end()) continue;
    const ContextConfig* config = raw->cluster.find_context(name);
    if (config == nullptr) {
      std::string known;
      for (const auto& c : raw->cluster.contexts) known += (known.empty() ? "" : ", ") + c.name;
      return Error(ErrorCode::not_found, "context '" + name + "' is not in " + raw->cluster.file +
                                             " (contexts: " + known + ")");
    }
    if (access.token.empty() && !is_loopback(config->control_bind)) {
      return Error("context '" + name + "' opens its control port on " + config->control_bind +
                   " (control_bind in " + raw->cluster.file +
                   ") without a token: set access.token_file there, or DAQFLOW_TOKEN");
    }
    HostSettings settings{raw->options.halt_timeout, raw->options.clock, raw->options.restarted};
    auto control = ContextControl::create(
        raw->cluster, *config, registry,
        [raw](const std::string& transport, const transport::EndpointOptions& o) {
          return raw->make_endpoint(transport, o);
        },
        settings);
    if (!control) return control.error().context("context '" + name + "'");
    Impl::Hosted h;
    h.control = std::move(*control);
    const MonitoringSettings& m = raw->cluster.monitoring;
    h.history = std::make_unique<MetricsHistory>(std::size_t{m.history_s} * 1000 / m.interval_ms,
                                                 m.max_series);
    ExecutiveHooks hooks{
        [raw_exec = exec.get()] { raw_exec->request_shutdown(); },
        [raw] { raw->renew_lease(); },
        [raw] { raw->stop_requested.store(true, std::memory_order_relaxed); },
        [raw] { return raw->run_state(); },
        [raw](std::uint64_t key) { return raw->run_key.exchange(key, std::memory_order_acq_rel); },
        raw->options.runs};
    h.api = std::make_unique<ControlApi>(raw->cluster, raw->addresses, *h.control, *h.history,
                                         access, std::move(hooks));
    raw->contexts.push_back(std::move(h));
    hosted.push_back(name);
  }
  return exec;
}

Result<void> Executive::start() {
  // spdlog's registry is made on first use; made here, before the server threads start, every
  // thread that logs sees it made (a first use on two threads at once is ordered only inside
  // libspdlog, where ThreadSanitizer cannot see it).
  (void)spdlog::default_logger_raw();
  for (Impl::Hosted& h : impl_->contexts) {
    const ContextConfig& c = h.control->config();
    const std::string& bind = c.control_bind;
    const ControlApi* api = h.api.get();
    auto server =
        HttpServer::start(bind, c.control_port, impl_->options.control_limits,
                          [api](const HttpRequest& request) { return api->serve(request); });
    if (!server) {
      impl_->stop_servers();
      return Error(ErrorCode::unavailable, "context " + c.name + ": " + server.error().message());
    }
    h.server = std::move(*server);
    h.api->serve_on(h.server.get());
    h.port = h.server->port();
    if (!impl_->options.record_dir.empty()) {
      auto recorder = Recorder::open(impl_->options.record_dir, c.name);
      if (!recorder) {
        impl_->stop_servers();
        return recorder.error().context("context " + c.name);
      }
      h.recorder = std::move(*recorder);
      spdlog::info("context {}: recording every sample to {}", c.name, h.recorder->path());
    }
    h.sampler = std::make_unique<HistorySampler>(
        *h.control, *h.history, std::chrono::milliseconds(impl_->cluster.monitoring.interval_ms),
        h.recorder.get());
    spdlog::info("context {}: control API on http://{}:{}/api/v1 ({} application(s))", c.name, bind,
                 h.port, h.control->hosts().size());
  }
  impl_->started = true;
  if (impl_->options.lease.count() != 0) {
    {
      std::lock_guard lock(impl_->mutex);
      impl_->lease_deadline = std::chrono::steady_clock::now() + impl_->options.lease;
    }
    spdlog::info("leased: shutting down when the controller has not renewed the lease for {} ms",
                 impl_->options.lease.count());
  }
  return ok();
}

void Executive::request_shutdown() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->shutdown_requested = true;
  }
  impl_->cv.notify_all();
}

void Executive::wait() {
  {
    std::unique_lock lock(impl_->mutex);
    while (!impl_->shutdown_requested) {
      if (impl_->options.lease.count() == 0) {
        impl_->cv.wait(lock);
        continue;
      }
      if (impl_->cv.wait_until(lock, impl_->lease_deadline) == std::cv_status::no_timeout) continue;
      if (std::chrono::steady_clock::now() < impl_->lease_deadline) continue;
      spdlog::warn(
          "no lease renewal from the controller for {} ms (it died, or this host lost "
          "its link to it): shutting down",
          impl_->options.lease.count());
      impl_->shutdown_requested = true;
    }
    if (impl_->shutting_down) {
      impl_->cv.wait(lock, [this] { return impl_->finished; });
      return;
    }
    impl_->shutting_down = true;
  }
  // After a failed start there is nothing to report: the process is exiting with the reason.
  const auto level = impl_->started ? spdlog::level::info : spdlog::level::debug;
  spdlog::log(level, "shutting down: halting the applications");
  // Contexts halt in parallel, each on its own control thread.
  std::vector<std::future<void>> halted;
  for (Impl::Hosted& h : impl_->contexts) halted.push_back(h.control->close());
  for (auto& f : halted) f.wait();
  impl_->stop_servers();
  spdlog::log(level, "shut down");
  {
    std::lock_guard lock(impl_->mutex);
    impl_->finished = true;
  }
  impl_->cv.notify_all();
}

const ClusterConfig& Executive::cluster() const {
  return impl_->cluster;
}

std::vector<std::string> Executive::contexts() const {
  std::vector<std::string> names;
  for (const auto& h : impl_->contexts) names.push_back(h.control->config().name);
  return names;
}

std::uint16_t Executive::control_port(std::string_view context) const {
  for (const auto& h : impl_->contexts) {
    if (h.control->config().name == context) return h.port;
  }
  return 0;
}

}  // namespace daqflow::runtime
