#pragma once
// Logging through spdlog. One process-wide logger; the executive names it after its context.

#include <spdlog/spdlog.h>

#include <string>

namespace daqflow::core {

// Sets up the default logger: stderr, "[time] [name] [level] message", level from a string
// ("trace", "debug", "info", "warn", "error"). Safe to call again to rename.
void init_logging(const std::string& name, const std::string& level = "info");

}  // namespace daqflow::core
