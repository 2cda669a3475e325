#pragma once
// Logging through spdlog. One process-wide logger; the executive names it after its context.
// Beside stderr, the logger keeps its last lines in memory, which the control API serves
// (GET /api/v1/logs): no shared file system is needed to read a context's log.

#include <spdlog/spdlog.h>

#include <cstdint>
#include <string>
#include <vector>

#include "daqflow/core/result.hpp"

namespace daqflow::core {

// Lines kept in memory (the oldest go first).
inline constexpr std::size_t kLogRingLines = 4096;

// Sets up the default logger: stderr, "[time] [name] [level] message", level from a string
// ("trace", "debug", "info", "warn", "error"), and the in-memory ring of its last lines (the
// same ring across calls). Safe to call again to rename.
void init_logging(const std::string& name, const std::string& level = "info");

// Also appends every line to path (its folder is created), from now on and across renames by
// init_logging(). Call before other threads log.
[[nodiscard]] Result<void> log_to_file(const std::string& path);

struct LogLine {
  std::int64_t unix_ms = 0;
  spdlog::level::level_enum level = spdlog::level::info;
  std::string logger;
  std::string text;
};

// The kept lines logged after since_ms (unix ms) at min_level or above, oldest first; none
// before init_logging(). Any thread.
[[nodiscard]] std::vector<LogLine> recent_log_lines(std::int64_t since_ms,
                                                    spdlog::level::level_enum min_level);

}  // namespace daqflow::core
