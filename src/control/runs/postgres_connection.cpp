// The run registry on a PostgreSQL server, through libpq. A write transaction takes a
// transaction-scoped advisory lock that every daqflow controller takes, so that they change the
// registry one at a time as they do on SQLite (numbers handed out in order, the schema created
// once).
#include <fmt/format.h>
#include <libpq-fe.h>

#include <mutex>

#include "sql_connection.hpp"

namespace daqflow::control::sql {

namespace {

constexpr Dialect kPostgres{
    .identity = "BIGSERIAL PRIMARY KEY",
    .real = "DOUBLE PRECISION",
    .order_column = "seq",
    .order_definition = "seq BIGSERIAL PRIMARY KEY,",
};

// The advisory lock's key: "daqflowR".
constexpr std::int64_t kRegistryLock = 0x64617166'6c6f7752;

// libpq numbers parameters $1, $2, ...: each '?' before a digit (outside a quoted literal)
// becomes '$'.
std::string numbered_dollars(std::string_view sql) {
  std::string out(sql);
  bool quoted = false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '\'') quoted = !quoted;
    if (!quoted && out[i] == '?' && i + 1 < out.size() && out[i + 1] >= '0' && out[i + 1] <= '9') {
      out[i] = '$';
    }
  }
  return out;
}

std::optional<std::string> text_of(const Value& v) {
  if (const auto* n = std::get_if<std::int64_t>(&v)) return std::to_string(*n);
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  if (const auto* t = std::get_if<std::string>(&v)) return *t;
  return std::nullopt;
}

std::string trimmed(const char* message) {
  std::string out(message != nullptr ? message : "");
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

class PostgresConnection final : public Connection {
 public:
  PostgresConnection(PGconn* conn, std::string location)
      : conn_(conn), location_(std::move(location)) {}
  ~PostgresConnection() override { PQfinish(conn_); }
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  [[nodiscard]] const Dialect& dialect() const override { return kPostgres; }

  Result<void> exec(std::string_view sql) override {
    const std::lock_guard lock(mutex_);
    const Outcome r(PQexec(conn_, std::string(sql).c_str()));
    if (auto e = failed(r.get())) return *e;
    return ok();
  }

  Result<std::vector<Row>> query(std::string_view sql, const std::vector<Value>& params) override {
    std::vector<std::optional<std::string>> texts;
    texts.reserve(params.size());
    for (const auto& p : params) texts.push_back(text_of(p));
    std::vector<const char*> values;
    values.reserve(texts.size());
    for (const auto& t : texts) values.push_back(t ? t->c_str() : nullptr);

    const std::lock_guard lock(mutex_);
    const Outcome r(PQexecParams(conn_, numbered_dollars(sql).c_str(),
                                 static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                                 nullptr, 0));
    if (auto e = failed(r.get())) return *e;
    std::vector<Row> rows;
    const int n = PQntuples(r.get());
    const int columns = PQnfields(r.get());
    rows.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      std::vector<std::optional<std::string>> row;
      for (int c = 0; c < columns; ++c) {
        if (PQgetisnull(r.get(), i, c) != 0) {
          row.emplace_back();
        } else {
          row.emplace_back(PQgetvalue(r.get(), i, c));
        }
      }
      rows.emplace_back(std::move(row));
    }
    return rows;
  }

  Result<void> begin_write() override {
    if (auto r = exec("BEGIN"); !r) return r;
    if (auto r = query("SELECT pg_advisory_xact_lock(?1)", {kRegistryLock}); !r) {
      (void)rollback();
      return r.error();
    }
    return ok();
  }

 private:
  struct Clear {
    void operator()(PGresult* r) const { PQclear(r); }
  };
  using Outcome = std::unique_ptr<PGresult, Clear>;

  [[nodiscard]] std::optional<Error> failed(PGresult* r) const {
    const auto status = PQresultStatus(r);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return std::nullopt;
    const std::string message =
        r != nullptr ? trimmed(PQresultErrorMessage(r)) : trimmed(PQerrorMessage(conn_));
    return Error(ErrorCode::unavailable, location_ + ": " + message);
  }

  PGconn* conn_;
  std::string location_;  // redacted
  std::mutex mutex_;
};

}  // namespace

Result<std::unique_ptr<Connection>> open_postgres(const std::string& conninfo) {
  // A server that does not answer is given 10 s, unless the location says otherwise (its
  // connect_timeout comes later and wins).
  const char* keywords[] = {"connect_timeout", "dbname", nullptr};
  const char* values[] = {"10", conninfo.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keywords, values, 1);
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    Error e(ErrorCode::unavailable,
            "cannot reach the run registry " + redacted(conninfo) + ": " +
                (conn != nullptr ? trimmed(PQerrorMessage(conn)) : std::string("out of memory")));
    PQfinish(conn);
    return e;
  }
  // The schema's "already exists, skipping" and other notices are not the user's business.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  return std::unique_ptr<Connection>(
      std::make_unique<PostgresConnection>(conn, redacted(conninfo)));
}

}  // namespace daqflow::control::sql
