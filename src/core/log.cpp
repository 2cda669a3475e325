#include "daqflow/core/log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <chrono>
#include <memory>

namespace daqflow::core {

namespace {

// spdlog's own ring sink: bounded, thread-safe, it keeps the raw message (time, level, text).
std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt>& ring() {
  static std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> r;
  return r;
}

std::shared_ptr<spdlog::sinks::basic_file_sink_mt>& file_sink() {
  static std::shared_ptr<spdlog::sinks::basic_file_sink_mt> f;
  return f;
}

}  // namespace

void init_logging(const std::string& name, const std::string& level) {
  if (!ring()) ring() = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(kLogRingLines);
  auto stderr_sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  std::vector<spdlog::sink_ptr> sinks{std::move(stderr_sink), ring()};
  if (file_sink()) sinks.push_back(file_sink());
  auto logger = std::make_shared<spdlog::logger>(name, sinks.begin(), sinks.end());
  logger->set_pattern("[%H:%M:%S.%e] [%n] [%^%l%$] %v");
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

Result<void> log_to_file(const std::string& path) {
  try {
    file_sink() = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, false);
  } catch (const spdlog::spdlog_ex& e) {
    return Error(ErrorCode::unavailable, "cannot open the log file " + path + ": " + e.what());
  }
  if (auto* logger = spdlog::default_logger_raw()) {
    logger->sinks().push_back(file_sink());
  }
  return ok();
}

std::vector<LogLine> recent_log_lines(std::int64_t since_ms, spdlog::level::level_enum min_level) {
  std::vector<LogLine> lines;
  const auto& r = ring();
  if (!r) return lines;
  for (const auto& m : r->last_raw()) {
    const std::int64_t ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(m.time.time_since_epoch()).count();
    if (ms <= since_ms || m.level < min_level) continue;
    lines.push_back({ms, m.level, std::string(m.logger_name.data(), m.logger_name.size()),
                     std::string(m.payload.data(), m.payload.size())});
  }
  return lines;
}

}  // namespace daqflow::core
