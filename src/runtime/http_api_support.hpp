#pragma once
// What the control API's files share (http_api.cpp: routing and commands; http_api_views.cpp:
// the JSON views): error replies and the one mapping of error codes to HTTP statuses, request
// bodies, paths and queries, and JSON for answers.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/runtime/http_server.hpp"
#include "daqflow/runtime/metrics.hpp"
#include "http_api.hpp"

namespace daqflow::runtime::api_support {

using json = nlohmann::json;

[[nodiscard]] ApiReply error(int status, std::string message);

// The one place where an error's code becomes an HTTP status.
[[nodiscard]] int http_status(ErrorCode code);

[[nodiscard]] ApiReply error(const Error& e);

// A request's JSON body. Whatever the parser refuses (bad syntax, a number past the range of a
// double) is the client's error, never an exception out of the handler.
[[nodiscard]] Result<json> parse_body(std::string_view body);
// The body as a JSON object; `what` starts the error ("a command's body is").
[[nodiscard]] Result<json> parse_object(std::string_view body, std::string_view what);

[[nodiscard]] std::vector<std::string_view> split_path(std::string_view path);

// %XX is a byte (a malformed escape stays as it is); in a query ('+' is a space) too.
[[nodiscard]] std::string url_decode(std::string_view in, bool plus_is_space);

// A path segment as sent on: what is not unreserved (RFC 3986) percent-encoded.
[[nodiscard]] std::string url_encode(std::string_view in);

// key=value&key=value; the first of a repeated key wins.
[[nodiscard]] std::map<std::string, std::string> parse_query(std::string_view q);

// The method a path under /api/v1 accepts, or nullptr when there is no such route.
[[nodiscard]] const char* route_method(const std::vector<std::string_view>& p);

// Strings from clients and applications may hold any bytes; invalid UTF-8 is replaced rather
// than making the answer fail.
[[nodiscard]] std::string dump(const json& body);

[[nodiscard]] const char* unit_name(Unit unit);

[[nodiscard]] std::int64_t unix_ms_now();

}  // namespace daqflow::runtime::api_support
