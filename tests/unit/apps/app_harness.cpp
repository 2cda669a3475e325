#include "apps/app_harness.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "daqflow/apps/builtin.hpp"

namespace daqflow::apps::testing {

namespace {
std::atomic<int> harnesses{0};  // shm run tags, one per harness
}  // namespace

Result<transport::Endpoint*> FakeContext::endpoint(const transport::EndpointOptions* options) {
  if (endpoint_) return endpoint_.get();
  options_ = options != nullptr ? *options : cluster_.transports.endpoint;
  options_.self = self_;
  auto made = transport_.create_endpoint(options_);
  if (!made) return made.error();
  endpoint_ = std::move(*made);
  if (on_endpoint) on_endpoint(endpoint_.get());
  return endpoint_.get();
}

TestHost::TestHost(const runtime::ClusterConfig& cluster, transport::AppIndex self,
                   transport::Transport& transport, const runtime::AppType& type)
    : context_(std::make_unique<FakeContext>(cluster, self, transport)),
      lifecycle_(type.make(), cluster.applications[self].id, [this](const std::string& reason) {
        const std::lock_guard lock(mutex_);
        if (failure_.empty()) failure_ = reason;
      }) {
  context_->on_endpoint = [this](transport::Endpoint* e) { lifecycle_.set_endpoint(e); };
}

TestHost::~TestHost() {
  stop_agent();
}

Result<void> TestHost::configure() {
  return lifecycle_.configure(*context_);
}

Result<void> TestHost::enable() {
  return lifecycle_.enable();
}

void TestHost::start_agent(bool spin) {
  stop_.store(false);
  lifecycle_.set_agent_running(true);
  agent_ = std::thread([this, spin] {
    while (!stop_.load(std::memory_order_acquire)) {
      const int work = lifecycle_.agent_round();
      if (work == 0 && !spin && !lifecycle_.agent_wait(std::chrono::microseconds(500))) {
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    }
  });
}

void TestHost::stop_agent() {
  stop_.store(true, std::memory_order_release);
  if (agent_.joinable()) agent_.join();
}

void TestHost::begin_halt() {
  if (auto r = lifecycle_.begin_halt(); !r) lifecycle_.note_failure(r.error().message());
}

bool TestHost::drained() {
  return lifecycle_.drained();
}

void TestHost::release() {
  if (auto r = lifecycle_.release(); !r) lifecycle_.note_failure(r.error().message());
}

void Harness::use_clock(core::Clock& clock) {
  for (auto& e : entries_) {
    if (e->host) e->host->context().use_clock(clock);
  }
}

std::string TestHost::failure() const {
  const std::lock_guard lock(mutex_);
  return failure_;
}

Harness::Harness(std::vector<AppSpec> specs, runtime::TransportSettings settings,
                 const std::string& transport_name, std::uint16_t data_port,
                 runtime::AppRegistry registry)
    : registry_(std::move(registry)) {
  if (registry_.names().empty()) register_builtin_apps(registry_);
  cluster.file = "unit-test.yaml";
  cluster.transports = settings;
  cluster.transports.default_transport = transport_name;
  runtime::ContextConfig context;
  context.name = "test";
  context.host = "127.0.0.1";
  context.data_port = data_port;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    runtime::ApplicationConfig a;
    a.index = static_cast<transport::AppIndex>(i);
    a.type = specs[i].type;
    a.id = specs[i].id;
    a.context = context.name;
    a.transport = transport_name;
    a.params = specs[i].params.is_null() ? nlohmann::json::object() : specs[i].params;
    auto e = std::make_unique<Entry>();
    e->id = a.id;
    if (a.type != "-") {
      e->type = registry_.find(a.type);
      if (e->type == nullptr) throw std::invalid_argument("unknown type " + a.type);
      auto params = runtime::validate_params(e->type->params, a.params);
      if (!params) throw std::invalid_argument(a.id + ": " + params.error().message());
      a.params = *params;
    }
    context.applications.push_back(a.index);
    cluster.applications.push_back(std::move(a));
    entries_.push_back(std::move(e));
  }
  cluster.contexts.push_back(context);
  addresses_ = cluster.address_table();
  transport::BackendOptions backend;
  // shm names its segments by run: one of this process's own.
  backend.run_tag = "unit-apps-" + std::to_string(::getpid()) + "-" + std::to_string(++harnesses);
  auto t = transport::make_transport(transport_name, addresses_, backend);
  if (!t) throw std::runtime_error(t.error().message());
  transport_ = std::move(*t);
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = *entries_[i];
    const auto index = static_cast<transport::AppIndex>(i);
    if (e.type == nullptr) {
      e.raw_context = std::make_unique<FakeContext>(cluster, index, *transport_);
    } else {
      e.host = std::make_unique<TestHost>(cluster, index, *transport_, *e.type);
    }
  }
}

Harness::~Harness() {
  halt_all();
}

Harness::Entry& Harness::entry(const std::string& id) {
  for (auto& e : entries_) {
    if (e->id == id) return *e;
  }
  throw std::invalid_argument("no application " + id);
}

const Harness::Entry& Harness::entry(const std::string& id) const {
  return const_cast<Harness*>(this)->entry(id);
}

runtime::Application& Harness::app(const std::string& id) {
  return entry(id).host->app();
}
FakeContext& Harness::context(const std::string& id) {
  Entry& e = entry(id);
  return e.host ? e.host->context() : *e.raw_context;
}
const runtime::AppType& Harness::type_of(const std::string& id) const {
  return *entry(id).type;
}

Result<void> Harness::configure(const std::string& id) {
  return entry(id).host->configure();
}

Result<void> Harness::enable(const std::string& id) {
  return entry(id).host->enable();
}

void Harness::configure_all() {
  for (auto& e : entries_) {
    if (!e->host) continue;
    auto r = e->host->configure();
    if (!r) ADD_FAILURE() << e->id << ": " << r.error().message();
  }
}

void Harness::start_agents() {
  for (auto& e : entries_) {
    if (e->host) e->host->start_agent(spin);
  }
}

void Harness::enable_in_rank_order() {
  std::vector<Entry*> order;
  for (auto& e : entries_) {
    if (e->host) order.push_back(e.get());
  }
  std::stable_sort(order.begin(), order.end(),
                   [](Entry* a, Entry* b) { return a->type->enable_rank < b->type->enable_rank; });
  for (Entry* e : order) {
    auto r = e->host->enable();
    if (!r) ADD_FAILURE() << e->id << ": " << r.error().message();
  }
}

bool Harness::wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void Harness::stop_agents() {
  for (auto& e : entries_) {
    if (e->host) e->host->stop_agent();
  }
}

void Harness::halt_all() {
  if (halted_) return;
  halted_ = true;
  std::vector<Entry*> order;
  for (auto& e : entries_) {
    if (e->host) order.push_back(e.get());
  }
  std::stable_sort(order.begin(), order.end(),
                   [](Entry* a, Entry* b) { return a->type->enable_rank > b->type->enable_rank; });
  for (Entry* e : order) {
    e->host->begin_halt();
    if (!wait_for([e] { return e->host->drained(); }, std::chrono::seconds(5))) {
      ADD_FAILURE() << e->id << " did not drain";
    }
  }
  stop_agents();
  // Like the executive: release every application, then close the endpoints (which drops what
  // they still hold), and only then destroy the applications and their pools.
  for (Entry* e : order) e->host->release();
  for (auto& e : entries_) context(e->id).close_endpoint();
}

std::string Harness::failure(const std::string& id) const {
  const Entry& e = entry(id);
  return e.host ? e.host->failure() : std::string();
}

bool Harness::any_failure() const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [](const auto& e) { return e->host && !e->host->failure().empty(); });
}

transport::Endpoint& Harness::raw(const std::string& id) {
  auto ep = context(id).endpoint(nullptr);
  if (!ep) throw std::runtime_error(ep.error().message());
  return **ep;
}

}  // namespace daqflow::apps::testing
