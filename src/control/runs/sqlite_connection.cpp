// The run registry in an SQLite file. A write transaction is BEGIN IMMEDIATE: it takes SQLite's
// write lock at once, so that two controllers sharing the file take turns (waiting up to 30 s for
// each other, each transaction lasting milliseconds) instead of failing.
#include <sqlite3.h>

#include <filesystem>

#include "sql_connection.hpp"

namespace daqflow::control::sql {

namespace {

constexpr Dialect kSqlite{
    .identity = "INTEGER PRIMARY KEY AUTOINCREMENT",
    .real = "REAL",
    .order_column = "rowid",
    .order_definition = "",
};

class SqliteConnection final : public Connection {
 public:
  SqliteConnection(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteConnection() override { sqlite3_close_v2(db_); }
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  [[nodiscard]] const Dialect& dialect() const override { return kSqlite; }

  Result<void> exec(std::string_view sql) override {
    char* message = nullptr;
    if (sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &message) == SQLITE_OK) {
      return ok();
    }
    Error e = failure(message != nullptr ? message : sqlite3_errmsg(db_));
    sqlite3_free(message);
    return e;
  }

  Result<std::vector<Row>> query(std::string_view sql, const std::vector<Value>& params) override {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &s, nullptr) !=
        SQLITE_OK) {
      return failure(sqlite3_errmsg(db_));
    }
    const std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> statement(s, sqlite3_finalize);
    for (std::size_t i = 0; i < params.size(); ++i) bind(s, static_cast<int>(i) + 1, params[i]);
    std::vector<Row> rows;
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      std::vector<std::optional<std::string>> columns;
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const auto* text = sqlite3_column_text(s, c);
        if (text == nullptr) {
          columns.emplace_back();
        } else {
          columns.emplace_back(reinterpret_cast<const char*>(text));
        }
      }
      rows.emplace_back(std::move(columns));
    }
    if (rc != SQLITE_DONE) return failure(sqlite3_errmsg(db_));
    return rows;
  }

  Result<void> begin_write() override { return exec("BEGIN IMMEDIATE"); }

 private:
  static void bind(sqlite3_stmt* s, int i, const Value& v) {
    if (const auto* n = std::get_if<std::int64_t>(&v)) {
      sqlite3_bind_int64(s, i, *n);
    } else if (const auto* d = std::get_if<double>(&v)) {
      sqlite3_bind_double(s, i, *d);
    } else if (const auto* t = std::get_if<std::string>(&v)) {
      sqlite3_bind_text(s, i, t->data(), static_cast<int>(t->size()), SQLITE_TRANSIENT);
    } else {
      sqlite3_bind_null(s, i);
    }
  }

  [[nodiscard]] Error failure(std::string_view message) const {
    return Error(ErrorCode::unavailable, path_ + ": " + std::string(message));
  }

  sqlite3* db_;
  std::string path_;
};

}  // namespace

Result<std::unique_ptr<Connection>> open_sqlite(const std::string& path) {
  const std::filesystem::path file(path);
  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) {
    return Error(ErrorCode::unavailable, "cannot create the run registry's folder " +
                                             file.parent_path().string() + ": " + ec.message());
  }
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Error e(ErrorCode::unavailable, "cannot open the run registry " + path + ": " +
                                        (db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
    sqlite3_close_v2(db);
    return e;
  }
  sqlite3_busy_timeout(db, 30'000);
  return std::unique_ptr<Connection>(std::make_unique<SqliteConnection>(db, path));
}

}  // namespace daqflow::control::sql
