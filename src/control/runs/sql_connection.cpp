// What the run registry's two databases share (sql_connection.hpp).
#include "sql_connection.hpp"

#include <charconv>

namespace daqflow::control::sql {

std::int64_t Row::integer(std::size_t col) const {
  const std::string t = text(col);
  std::int64_t v = 0;
  std::from_chars(t.data(), t.data() + t.size(), v);
  return v;
}

double Row::real(std::size_t col) const {
  const std::string t = text(col);
  double v = 0;
  std::from_chars(t.data(), t.data() + t.size(), v);
  return v;
}

bool is_postgres(std::string_view location) {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

std::string redacted(std::string_view location) {
  std::string out(location);
  if (!is_postgres(location)) return out;
  // scheme://user:password@host...: the password is between the first ':' after the scheme and
  // the '@' of the authority.
  const auto authority = out.find("://") + 3;
  const auto at = out.find('@', authority);
  const auto end_of_authority = out.find_first_of("/?", authority);
  if (at == std::string::npos || (end_of_authority != std::string::npos && at > end_of_authority)) {
    return out;
  }
  const auto colon = out.find(':', authority);
  if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
  return out;
}

}  // namespace daqflow::control::sql
