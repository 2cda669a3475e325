#include "apps/evb/test_evb_cluster.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "daqflow/apps/builtin.hpp"
#include "daqflow/transport/fault.hpp"

namespace daqflow::apps::testing {

EvbCluster::EvbCluster(std::vector<AppSpec> specs, const std::string& transport,
                       std::uint16_t data_port, runtime::TransportSettings settings) {
  register_builtin_apps(registry_);
  cluster.file = "evb-unit-test.yaml";
  cluster.transports = settings;
  cluster.transports.default_transport = transport;
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
    a.transport = transport;
    auto e = std::make_unique<Entry>();
    e->id = a.id;
    e->type = registry_.find(a.type);
    if (e->type == nullptr) throw std::invalid_argument("unknown type " + a.type);
    auto params = runtime::validate_params(
        e->type->params, specs[i].params.is_null() ? nlohmann::json::object() : specs[i].params);
    if (!params) throw std::invalid_argument(a.id + ": " + params.error().message());
    a.params = *params;
    context.applications.push_back(a.index);
    cluster.applications.push_back(std::move(a));
    entries_.push_back(std::move(e));
  }
  cluster.contexts.push_back(context);
  addresses_ = cluster.address_table();
  auto t = transport::make_transport(transport, addresses_);
  if (!t) throw std::runtime_error(t.error().message());
  transport_ = std::move(*t);
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = *entries_[i];
    e.host = std::make_unique<TestHost>(cluster, static_cast<transport::AppIndex>(i), *transport_,
                                        *e.type);
  }
}

EvbCluster::~EvbCluster() {
  halt(std::chrono::seconds(2));
}

EvbCluster::Entry& EvbCluster::entry(const std::string& id) {
  for (auto& e : entries_) {
    if (e->id == id) return *e;
  }
  throw std::invalid_argument("no application " + id);
}

const EvbCluster::Entry& EvbCluster::entry(const std::string& id) const {
  return const_cast<EvbCluster*>(this)->entry(id);
}

void EvbCluster::use_clock(core::Clock& clock) {
  for (auto& e : entries_) e->host->context().use_clock(clock);
}

std::string EvbCluster::start() {
  for (auto& e : entries_) {
    auto r = e->host->configure();
    if (!r) return e->id + ": " + r.error().message();
  }
  running_ = true;
  for (auto& e : entries_) e->host->start_agent(false);
  std::vector<Entry*> order;
  for (auto& e : entries_) order.push_back(e.get());
  std::stable_sort(order.begin(), order.end(),
                   [](Entry* a, Entry* b) { return a->type->enable_rank < b->type->enable_rank; });
  for (Entry* e : order) {
    if (auto r = e->host->enable(); !r) return e->id + ": " + r.error().message();
  }
  return {};
}

void EvbCluster::kill(const std::string& id) {
  Entry& e = entry(id);
  e.host->stop_agent();
  e.killed = true;
  // The agent is stopped: this thread owns the endpoint now.
  if (transport::Endpoint* ep = e.host->context().raw_endpoint()) {
    if (transport::FaultInjection* f = transport::fault_injection(*ep)) f->abort();
  }
}

void EvbCluster::freeze(const std::string& id) {
  Entry& e = entry(id);
  e.host->stop_agent();
  e.killed = true;
}

bool EvbCluster::halt(std::chrono::milliseconds timeout, bool expect_drained) {
  if (halted_) return true;
  halted_ = true;
  std::vector<Entry*> order;
  for (auto& e : entries_) {
    if (!e->killed) order.push_back(e.get());
  }
  std::stable_sort(order.begin(), order.end(),
                   [](Entry* a, Entry* b) { return a->type->enable_rank > b->type->enable_rank; });
  bool drained = true;
  for (Entry* e : running_ ? order : std::vector<Entry*>{}) {
    e->host->begin_halt();
    if (!wait_for([e] { return e->host->drained(); }, timeout)) {
      if (expect_drained) ADD_FAILURE() << e->id << " did not drain";
      drained = false;
    }
  }
  for (auto& e : entries_) e->host->stop_agent();
  for (auto& e : entries_) e->host->release();
  for (auto& e : entries_) e->host->context().close_endpoint();
  return drained;
}

runtime::Application& EvbCluster::app(const std::string& id) {
  return entry(id).host->app();
}

nlohmann::json EvbCluster::metrics(const std::string& id) {
  nlohmann::json snap = nlohmann::json::object();
  entry(id).host->context().metrics().snapshot(snap);
  return snap;
}

std::uint64_t EvbCluster::metric(const std::string& id, const std::string& name) {
  const nlohmann::json m = metrics(id);
  return m.contains(name) && m[name].is_number() ? m[name].get<std::uint64_t>() : 0;
}

transport::EndpointStats EvbCluster::endpoint_stats(const std::string& id) {
  transport::Endpoint* ep = entry(id).host->context().raw_endpoint();
  return ep != nullptr ? ep->stats() : transport::EndpointStats{};
}

std::string EvbCluster::failure(const std::string& id) const {
  return entry(id).host->failure();
}

std::string EvbCluster::failures() const {
  std::string out;
  for (const auto& e : entries_) {
    if (const std::string f = e->host->failure(); !f.empty()) out += e->id + ": " + f + "; ";
  }
  return out;
}

bool EvbCluster::wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace daqflow::apps::testing
