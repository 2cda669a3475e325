#pragma once
// Helpers shared by the built-in applications: application names for error messages. Control
// path only.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::apps::detail {

// Application ids by index (a copy: the configuration is only guaranteed during configure()).
[[nodiscard]] std::vector<std::string> application_ids(const runtime::ClusterConfig& cluster);

// "sink0" for a known index, else "application #7" (for error messages, not the data path).
[[nodiscard]] std::string peer_name(const std::vector<std::string>& ids, transport::AppIndex peer);

}  // namespace daqflow::apps::detail
