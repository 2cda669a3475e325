#include "daqflow/core/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <memory>

namespace daqflow::core {

void init_logging(const std::string& name, const std::string& level) {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>(name, std::move(sink));
  logger->set_pattern("[%H:%M:%S.%e] [%n] [%^%l%$] %v");
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace daqflow::core
