// Fuzzes the control API's request handling (docs/control-api.md): a method, a path and a body
// from the input, handled by a real context (a source and a sink on inproc). Every answer is a
// status 200-599 with a JSON object; nothing crashes. State-machine commands and shutdown are
// left out (they start threads and would end the context); parameters, actions and every read
// are in.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "daqflow/apps/builtin.hpp"
#include "daqflow/runtime/config.hpp"
#include "daqflow/transport/transport.hpp"
#include "runtime/executive_context.hpp"
#include "runtime/http_api.hpp"

namespace {

using namespace daqflow;

constexpr const char* kConfig = R"(run: {number: 1}
transports: {default: inproc}
contexts:
  - name: ctx
    host: 127.0.0.1
    control_port: 9999
    applications:
      - {type: source, id: src, destinations: [snk], message_size: 64, count: 10}
      - {type: sink, id: snk}
)";

struct World {
  runtime::AppRegistry registry;
  runtime::ClusterConfig cluster;
  transport::AddressTable addresses;
  std::unique_ptr<transport::Transport> transport;
  std::unique_ptr<runtime::ContextControl> control;
  std::unique_ptr<runtime::MetricsHistory> history;
  std::unique_ptr<runtime::ControlApi> api;

  World() {
    apps::register_builtin_apps(registry);
    cluster = std::move(runtime::parse_config(kConfig, "fuzz.yaml", registry)).value();
    addresses = cluster.address_table();
    transport = std::move(transport::make_transport("inproc", addresses, {})).value();
    control = std::move(runtime::ContextControl::create(
                            cluster, cluster.contexts.front(), registry,
                            [this](const std::string&, const transport::EndpointOptions& o) {
                              return transport->create_endpoint(o);
                            },
                            runtime::HostSettings{}))
                  .value();
    // One sample in the history, so that its queries find a series.
    history = std::make_unique<runtime::MetricsHistory>(60, 16);
    history->add(1000, runtime::sample_context(*control));
    // Every hook answers as an executive without a lease or a controller would (shutdown and
    // stop requests are taken and do nothing here).
    runtime::ExecutiveHooks hooks;
    hooks.request_shutdown = [] {};
    hooks.renew_lease = [] {};
    hooks.request_stop = [] {};
    api = std::make_unique<runtime::ControlApi>(cluster, addresses, *control, *history,
                                                runtime::AccessPolicy{}, std::move(hooks));
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static World world;
  static constexpr std::string_view kMethods[] = {"GET",    "HEAD",    "PUT",  "POST",
                                                  "DELETE", "OPTIONS", "PATCH"};
  if (size == 0) return 0;
  const std::string_view method = kMethods[data[0] % std::size(kMethods)];
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::size_t newline = rest.find('\n');
  const std::string_view path = rest.substr(0, newline);
  const std::string_view body = newline == std::string_view::npos ? "" : rest.substr(newline + 1);
  if (path.find("fsm") != std::string_view::npos ||
      path.find("shutdown") != std::string_view::npos) {
    return 0;
  }
  const runtime::ApiReply reply = world.api->handle(method, path, body);
  // Every answer is JSON, but for the Prometheus text of GET /metrics.
  const bool json = reply.body.is_object() || reply.body.is_array();
  const bool text = !reply.content_type.empty() && !reply.text.empty();
  if (reply.status < 200 || reply.status > 599 || !(json || text)) __builtin_trap();
  return 0;
}
