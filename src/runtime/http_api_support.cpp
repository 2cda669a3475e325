#include "http_api_support.hpp"

#include <cctype>
#include <chrono>

#include "daqflow/core/enum_names.hpp"

namespace daqflow::runtime::api_support {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

ApiReply error(int status, std::string message) {
  return {status, json{{"error", std::move(message)}}, {}};
}

// The one place where an error's code becomes an HTTP status.
int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument:
      return 400;
    case ErrorCode::not_found:
      return 404;
    case ErrorCode::conflict:
      return 409;
    case ErrorCode::unavailable:
      return 503;
    case ErrorCode::timed_out:
      return 504;
    case ErrorCode::internal:
      return 500;
  }
  return 500;
}

ApiReply error(const Error& e) {
  return error(http_status(e.code()), e.message());
}

// A request's JSON body. Whatever the parser refuses (bad syntax, a number past the range of a
// double) is the client's error, never an exception out of the handler.
Result<json> parse_body(std::string_view body) {
  try {
    return json::parse(body);
  } catch (const json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, ..." -> "parse error at line 1, ..."
    if (const auto end = what.find("] "); end != std::string::npos) what.erase(0, end + 2);
    return Error("malformed JSON body: " + what);
  }
}

Result<json> parse_object(std::string_view body, std::string_view what) {
  auto parsed = parse_body(body);
  if (parsed && !parsed->is_object()) {
    return Error(std::string(what) + " a JSON object, not " + parsed->type_name());
  }
  return parsed;
}

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const auto slash = path.find('/');
    const auto part = path.substr(0, slash);
    if (!part.empty()) parts.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

// %XX is a byte (a malformed escape stays as it is); in a query ('+' is a space) too.
std::string url_decode(std::string_view in, bool plus_is_space) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (plus_is_space && in[i] == '+') {
      out += ' ';
    } else if (in[i] == '%' && i + 2 < in.size() && hex_digit(in[i + 1]) >= 0 &&
               hex_digit(in[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(in[i + 1]) * 16 + hex_digit(in[i + 2]));
      i += 2;
    } else {
      out += in[i];
    }
  }
  return out;
}

// A path segment as sent on: what is not unreserved (RFC 3986) percent-encoded.
std::string url_encode(std::string_view in) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : in) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

// key=value&key=value; the first of a repeated key wins.
std::map<std::string, std::string> parse_query(std::string_view q) {
  std::map<std::string, std::string> out;
  while (!q.empty()) {
    const auto amp = q.find('&');
    const std::string_view pair = q.substr(0, amp);
    const auto eq = pair.find('=');
    const std::string key = url_decode(pair.substr(0, eq), true);
    const std::string value =
        eq == std::string_view::npos ? std::string() : url_decode(pair.substr(eq + 1), true);
    if (!key.empty()) out.emplace(key, value);
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return out;
}

// The method a path under /api/v1 accepts, or nullptr when there is no such route.
const char* route_method(const std::vector<std::string_view>& p) {
  const std::size_t n = p.size();
  if (n == 1 && (p[0] == "context" || p[0] == "cluster" || p[0] == "apps" || p[0] == "history" ||
                 p[0] == "logs" || p[0] == "snapshot" || p[0] == "snapshots" || p[0] == "contexts"))
    return "GET";
  if (n == 1 && (p[0] == "shutdown" || p[0] == "lease" || p[0] == "stop")) return "POST";
  if ((n == 1 || n == 2) && p[0] == "runs") return "GET";
  if (n == 2 && p[0] == "apps") return "GET";
  if (n == 3 && p[0] == "apps" && p[2] == "params") return "PUT";
  if (n == 4 && p[0] == "apps" && p[2] == "fsm") return "POST";
  if (n == 4 && p[0] == "apps" && p[2] == "actions") return "POST";
  if (n == 2 && p[0] == "fsm") return "POST";
  return nullptr;
}

// Strings from clients and applications may hold any bytes; invalid UTF-8 is replaced rather
// than making the answer fail.
std::string dump(const json& body) {
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

const char* unit_name(Unit unit) {
  static constexpr auto kNames = core::enum_names<Unit>({{Unit::none, ""},
                                                         {Unit::bytes, "bytes"},
                                                         {Unit::nanoseconds, "ns"},
                                                         {Unit::megabytes_per_second, "MB/s"}});
  return kNames.name(unit, "");
}

std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace daqflow::runtime::api_support
