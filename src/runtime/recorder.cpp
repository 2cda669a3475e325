#include "recorder.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "app_host.hpp"
#include "executive_context.hpp"

namespace daqflow::runtime {

Result<std::unique_ptr<Recorder>> Recorder::open(const std::string& dir,
                                                 const std::string& context) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Error(ErrorCode::unavailable,
                 "cannot create the recording folder " + dir + ": " + ec.message());
  std::string path = (std::filesystem::path(dir) / (context + ".jsonl")).string();
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr) {
    return Error(code_of_errno(errno),
                 "cannot open the recording " + path + ": " + std::strerror(errno));
  }
  return std::unique_ptr<Recorder>(new Recorder(file, std::move(path)));
}

Recorder::~Recorder() {
  std::fclose(file_);
}

void Recorder::write(std::int64_t unix_ms, const ContextControl& context) {
  using nlohmann::json;
  json apps = json::array();
  for (const auto& host : context.hosts()) {
    json counters = json::object();
    json gauges = json::object();
    host->metrics_registry().for_each([&](const MetricSample& m) {
      (m.kind == MetricKind::counter ? counters : gauges)[m.name] = m.value;
    });
    if (const auto e = host->endpoint_figures()) {
      const transport::EndpointStats& s = e->stats;
      counters["endpoint.messages_sent"] = s.messages_sent;
      counters["endpoint.bytes_sent"] = s.bytes_sent;
      counters["endpoint.messages_received"] = s.messages_received;
      counters["endpoint.bytes_received"] = s.bytes_received;
      counters["endpoint.back_pressured"] = s.back_pressured;
      counters["endpoint.recv_stalls"] = s.recv_stalls;
      gauges["endpoint.recv_pool_in_use"] = s.recv_pool_in_use;
      gauges["endpoint.recv_pool_high_water"] = s.recv_pool_high_water;
    }
    apps.push_back({{"id", host->id()},
                    {"type", host->type().name},
                    {"state", to_string(host->status().state)},
                    {"counters", std::move(counters)},
                    {"gauges", std::move(gauges)}});
  }
  const std::string line =
      json{{"t", unix_ms}, {"context", context.config().name}, {"apps", std::move(apps)}}.dump(
          -1, ' ', false, json::error_handler_t::replace) +
      "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    if (!failed_) spdlog::error("cannot write the recording {}: {}", path_, std::strerror(errno));
    failed_ = true;
  }
}

}  // namespace daqflow::runtime
