#pragma once
// Who may change things through the control ports (docs/control-api.md, Access): a bearer token
// shared by the executives and their clients (daqflow run, ctl, status, the dashboard).

#include <string>
#include <string_view>

#include "daqflow/core/result.hpp"

namespace daqflow::runtime {

struct ClusterConfig;

// The token of a configuration: the contents of access.token_file (surrounding white space
// trimmed), else the environment variable DAQFLOW_TOKEN, else none (empty). An unreadable or
// empty file is an error naming it.
[[nodiscard]] Result<std::string> access_token(const ClusterConfig& config);

// The token in token_file if one is named (daqflow ctl/status --token-file), else
// DAQFLOW_TOKEN, else none; read as above.
[[nodiscard]] Result<std::string> token_from(const std::string& token_file);

// Whether a listening address reaches this host only (127.0.0.0/8, ::1).
[[nodiscard]] bool is_loopback(std::string_view address);

// Compares a request's Authorization header with "Bearer TOKEN" in time independent of where
// they differ.
[[nodiscard]] bool bearer_matches(std::string_view authorization, std::string_view token);

}  // namespace daqflow::runtime
