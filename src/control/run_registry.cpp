// The run registry in an SQLite file (run_registry.hpp). Every change is one transaction; a run's
// number is taken under SQLite's write lock (BEGIN IMMEDIATE), so controllers sharing the file
// never get the same one. The schema carries its version and is brought up to date on open.
#include "daqflow/control/run_registry.hpp"

#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <utility>

namespace daqflow::control {

namespace {

using nlohmann::json;

// One prepared statement; parameters are numbered (?1, ?2, ...) and bound in order of number.
class Statement {
 public:
  Statement(sqlite3* db, std::string_view sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &s_, nullptr) !=
        SQLITE_OK) {
      s_ = nullptr;
    }
  }
  ~Statement() { sqlite3_finalize(s_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Statement& bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Statement& bind(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, std::optional<std::int64_t> v) {
    if (v) return bind(i, *v);
    sqlite3_bind_null(s_, i);
    return *this;
  }
  // Binds the values to ?first, ?first + 1, ...
  template <typename... Values>
  Statement& bind_from(int first, const Values&... values) {
    int i = first;
    (bind(i++, values), ...);
    return *this;
  }

  // SQLITE_ROW, SQLITE_DONE or an error code (SQLITE_MISUSE for a statement that did not prepare).
  int step() { return s_ == nullptr ? SQLITE_MISUSE : sqlite3_step(s_); }
  [[nodiscard]] std::int64_t integer(int col) const { return sqlite3_column_int64(s_, col); }
  [[nodiscard]] double real(int col) const { return sqlite3_column_double(s_, col); }
  [[nodiscard]] bool null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  [[nodiscard]] std::string text(int col) const {
    const auto* p = sqlite3_column_text(s_, col);
    return p == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(p));
  }
  [[nodiscard]] const char* message() const { return sqlite3_errmsg(db_); }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

// Version k's statements bring a registry of version k - 1 to k.
constexpr std::string_view kMigrations[] = {
    // 1: runs, their transitions, files and comments.
    R"sql(
      CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        number INTEGER NOT NULL,
        state TEXT NOT NULL,
        config_name TEXT NOT NULL,
        config_path TEXT NOT NULL,
        config_text TEXT NOT NULL,
        version TEXT NOT NULL,
        host TEXT NOT NULL,
        user_name TEXT NOT NULL,
        started_ms INTEGER NOT NULL,
        stopped_ms INTEGER,
        summary TEXT);
      CREATE INDEX runs_by_number ON runs (number);
      CREATE TABLE transitions (
        run_id INTEGER NOT NULL REFERENCES runs (id),
        at_ms INTEGER NOT NULL,
        transition TEXT NOT NULL,
        application TEXT NOT NULL,
        outcome TEXT NOT NULL,
        duration_ms REAL NOT NULL,
        reason TEXT NOT NULL);
      CREATE TABLE files (
        run_id INTEGER NOT NULL REFERENCES runs (id),
        path TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        checksum TEXT NOT NULL);
      CREATE TABLE comments (
        run_id INTEGER NOT NULL REFERENCES runs (id),
        at_ms INTEGER NOT NULL,
        user_name TEXT NOT NULL,
        text TEXT NOT NULL);
    )sql",
};
static_assert(std::size(kMigrations) == kRunRegistrySchema);

// The row of a number's last run.
constexpr std::string_view kRunId = "(SELECT MAX(id) FROM runs WHERE number = ?1)";

class SqliteRegistry final : public RunRegistry {
 public:
  SqliteRegistry(sqlite3* db, std::string location) : db_(db), location_(std::move(location)) {}
  ~SqliteRegistry() override { sqlite3_close_v2(db_); }
  SqliteRegistry(const SqliteRegistry&) = delete;
  SqliteRegistry& operator=(const SqliteRegistry&) = delete;

  Result<void> migrate() {
    return in_transaction([&]() -> Result<void> {
      if (auto r = exec("CREATE TABLE IF NOT EXISTS registry "
                        "(key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
          !r) {
        return r;
      }
      const std::int64_t version = setting("schema", 0);
      if (version > kRunRegistrySchema) {
        return Error(ErrorCode::conflict,
                     location_ + ": the run registry's schema is version " +
                         std::to_string(version) + ", newer than this daqflow's (" +
                         std::to_string(kRunRegistrySchema) + "): use a newer daqflow");
      }
      for (auto v = version; v < kRunRegistrySchema; ++v) {
        if (auto r = exec(kMigrations[v]); !r) return r;
      }
      return put_setting("schema", kRunRegistrySchema);
    });
  }

  Result<std::uint32_t> begin_run(const RunStart& s) override {
    std::uint32_t number = 0;
    auto r = in_transaction([&]() -> Result<void> {
      const std::int64_t next = setting("next_number", 1);
      if (s.number) {
        number = *s.number;
        Statement seen(db_,
                       "SELECT started_ms, config_name FROM runs WHERE number = ?1 "
                       "ORDER BY id DESC LIMIT 1");
        seen.bind(1, std::int64_t{number});
        if (seen.step() == SQLITE_ROW && !s.reuse) {
          return Error(ErrorCode::conflict,
                       "run " + std::to_string(number) + " was run before (configuration '" +
                           seen.text(1) + "'): leave run.number out of the configuration for " +
                           "the registry's next number, or reuse it on purpose");
        }
      } else {
        if (next > 0xFFFFFFFFLL) return Error(ErrorCode::conflict, "run numbers are used up");
        number = static_cast<std::uint32_t>(next);
      }
      Statement add(db_,
                    "INSERT INTO runs (number, state, config_name, config_path, config_text, "
                    "version, host, user_name, started_ms) "
                    "VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
      add.bind_from(1, std::int64_t{number}, s.config_name, s.config_path, s.config_text, s.version,
                    s.host, s.user, s.started_ms);
      if (add.step() != SQLITE_DONE) return failure("recording the run", add);
      return put_setting("next_number", std::max<std::int64_t>(next, std::int64_t{number} + 1));
    });
    if (!r) return r.error();
    return number;
  }

  Result<void> add_transitions(std::uint32_t run,
                               const std::vector<TransitionRecord>& transitions) override {
    return in_transaction([&]() -> Result<void> {
      for (const auto& t : transitions) {
        Statement add(db_,
                      "INSERT INTO transitions (run_id, at_ms, transition, application, "
                      "outcome, duration_ms, reason) VALUES (" +
                          std::string(kRunId) + ", ?2, ?3, ?4, ?5, ?6, ?7)");
        add.bind_from(1, std::int64_t{run}, t.at_ms, t.transition, t.application, t.outcome,
                      t.duration_ms, t.reason);
        if (add.step() != SQLITE_DONE) return failure("recording a transition", add);
      }
      return ok();
    });
  }

  Result<void> add_files(std::uint32_t run, const std::vector<RunFile>& files) override {
    return in_transaction([&]() -> Result<void> {
      for (const auto& f : files) {
        Statement add(db_, "INSERT INTO files (run_id, path, bytes, checksum) VALUES (" +
                               std::string(kRunId) + ", ?2, ?3, ?4)");
        add.bind_from(1, std::int64_t{run}, f.path, static_cast<std::int64_t>(f.bytes), f.checksum);
        if (add.step() != SQLITE_DONE) return failure("recording a file", add);
      }
      return ok();
    });
  }

  Result<void> end_run(std::uint32_t run, std::string_view state, std::int64_t stopped_ms,
                       const json& summary) override {
    return update_run(run, "state = ?2, stopped_ms = ?3, summary = ?4", [&](Statement& s) {
      s.bind(2, state).bind(3, stopped_ms).bind(4, summary.is_null() ? "" : summary.dump());
    });
  }

  Result<void> set_state(std::uint32_t run, std::string_view state) override {
    return update_run(run, "state = ?2", [&](Statement& s) { s.bind(2, state); });
  }

  Result<void> comment(std::uint32_t run, const RunComment& c) override {
    return in_transaction([&]() -> Result<void> {
      if (auto known = exists(run); !known) return known.error();
      Statement add(db_, "INSERT INTO comments (run_id, at_ms, user_name, text) VALUES (" +
                             std::string(kRunId) + ", ?2, ?3, ?4)");
      add.bind_from(1, std::int64_t{run}, c.at_ms, c.user, c.text);
      if (add.step() != SQLITE_DONE) return failure("recording the comment", add);
      return ok();
    });
  }

  Result<std::vector<RunRecord>> list(const RunFilter& f) override {
    Statement q(db_, std::string(kRunColumns) +
                         " WHERE (?1 IS NULL OR started_ms >= ?1) AND (?2 IS NULL OR "
                         "started_ms < ?2) AND (?3 = '' OR state = ?3) AND (?4 = '' OR "
                         "config_name = ?4) ORDER BY id DESC LIMIT ?5");
    q.bind_from(1, f.since_ms, f.until_ms, f.state, f.config_name,
                static_cast<std::int64_t>(f.limit));
    std::vector<RunRecord> out;
    int rc = SQLITE_ROW;
    while ((rc = q.step()) == SQLITE_ROW) out.push_back(record_of(q));
    if (rc != SQLITE_DONE) return failure("listing runs", q);
    return out;
  }

  Result<RunRecord> show(std::uint32_t run) override {
    Statement q(db_, std::string(kRunColumns) + " WHERE id = " + std::string(kRunId));
    q.bind(1, std::int64_t{run});
    const int rc = q.step();
    if (rc == SQLITE_DONE) return no_run(run);
    if (rc != SQLITE_ROW) return failure("reading the run", q);
    RunRecord r = record_of(q);
    Statement t(db_,
                "SELECT at_ms, transition, application, outcome, duration_ms, reason FROM "
                "transitions WHERE run_id = " +
                    std::string(kRunId) + " ORDER BY rowid");
    t.bind(1, std::int64_t{run});
    while (t.step() == SQLITE_ROW) {
      r.transitions.push_back(
          {t.integer(0), t.text(1), t.text(2), t.text(3), t.real(4), t.text(5)});
    }
    Statement fs(db_, "SELECT path, bytes, checksum FROM files WHERE run_id = " +
                          std::string(kRunId) + " ORDER BY rowid");
    fs.bind(1, std::int64_t{run});
    while (fs.step() == SQLITE_ROW) {
      r.files.push_back({fs.text(0), static_cast<std::uint64_t>(fs.integer(1)), fs.text(2)});
    }
    Statement cs(db_, "SELECT at_ms, user_name, text FROM comments WHERE run_id = " +
                          std::string(kRunId) + " ORDER BY rowid");
    cs.bind(1, std::int64_t{run});
    while (cs.step() == SQLITE_ROW) r.comments.push_back({cs.integer(0), cs.text(1), cs.text(2)});
    return r;
  }

  [[nodiscard]] const std::string& location() const override { return location_; }

 private:
  static constexpr std::string_view kRunColumns =
      "SELECT number, state, config_name, config_path, config_text, version, host, user_name, "
      "started_ms, stopped_ms, summary FROM runs";

  static RunRecord record_of(const Statement& q) {
    RunRecord r;
    r.number = static_cast<std::uint32_t>(q.integer(0));
    r.state = q.text(1);
    r.config_name = q.text(2);
    r.config_path = q.text(3);
    r.config_text = q.text(4);
    r.version = q.text(5);
    r.host = q.text(6);
    r.user = q.text(7);
    r.started_ms = q.integer(8);
    if (!q.null(9)) r.stopped_ms = q.integer(9);
    const std::string summary = q.text(10);
    if (!summary.empty()) r.summary = json::parse(summary, nullptr, false);
    return r;
  }

  Error failure(const std::string& what, const Statement& s) const {
    return Error(ErrorCode::unavailable, location_ + ": " + what + ": " + s.message());
  }
  static Error no_run(std::uint32_t run) {
    return Error(ErrorCode::not_found, "no run " + std::to_string(run) + " in the registry");
  }

  Result<void> exec(std::string_view sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &message) == SQLITE_OK) {
      return ok();
    }
    Error e(ErrorCode::unavailable,
            location_ + ": " + (message != nullptr ? message : sqlite3_errmsg(db_)));
    sqlite3_free(message);
    return e;
  }

  // Runs `body` in a write transaction: committed when it succeeds, rolled back when it fails.
  template <typename Body>
  Result<void> in_transaction(Body body) {
    if (auto r = exec("BEGIN IMMEDIATE"); !r) return r;
    auto r = body();
    if (!r) {
      (void)exec("ROLLBACK");
      return r;
    }
    return exec("COMMIT");
  }

  template <typename Bind>
  Result<void> update_run(std::uint32_t run, std::string_view set, Bind bind) {
    return in_transaction([&]() -> Result<void> {
      if (auto known = exists(run); !known) return known.error();
      Statement u(db_,
                  "UPDATE runs SET " + std::string(set) + " WHERE id = " + std::string(kRunId));
      u.bind(1, std::int64_t{run});
      bind(u);
      if (u.step() != SQLITE_DONE) return failure("updating the run", u);
      return ok();
    });
  }

  Result<void> exists(std::uint32_t run) {
    Statement q(db_, "SELECT 1 FROM runs WHERE number = ?1");
    q.bind(1, std::int64_t{run});
    if (q.step() != SQLITE_ROW) return no_run(run);
    return ok();
  }

  std::int64_t setting(std::string_view key, std::int64_t fallback) {
    Statement q(db_, "SELECT value FROM registry WHERE key = ?1");
    q.bind(1, key);
    return q.step() == SQLITE_ROW ? q.integer(0) : fallback;
  }
  Result<void> put_setting(std::string_view key, std::int64_t value) {
    Statement u(db_,
                "INSERT INTO registry (key, value) VALUES (?1, ?2) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    u.bind(1, key).bind(2, value);
    if (u.step() != SQLITE_DONE) return failure("writing the registry's settings", u);
    return ok();
  }

  sqlite3* db_;
  std::string location_;
};

}  // namespace

Result<std::unique_ptr<RunRegistry>> RunRegistry::open(const std::string& location) {
  const std::filesystem::path path(location);
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    return Error(ErrorCode::unavailable, "cannot create the run registry's folder " +
                                             path.parent_path().string() + ": " + ec.message());
  }
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(location.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Error e(ErrorCode::unavailable, "cannot open the run registry " + location + ": " +
                                        (db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
    sqlite3_close_v2(db);
    return e;
  }
  // Controllers wait for each other's transactions (each a few milliseconds) rather than fail.
  sqlite3_busy_timeout(db, 30'000);
  auto registry = std::make_unique<SqliteRegistry>(db, location);
  if (auto r = registry->migrate(); !r) return r.error();
  return std::unique_ptr<RunRegistry>(std::move(registry));
}

std::string default_registry_location() {
  if (const char* db = std::getenv("DAQFLOW_RUNS_DB"); db != nullptr && *db != '\0') return db;
  if (const char* state = std::getenv("XDG_STATE_HOME"); state != nullptr && *state != '\0') {
    return (std::filesystem::path(state) / "daqflow" / "runs.sqlite").string();
  }
  const char* home = std::getenv("HOME");
  return (std::filesystem::path(home != nullptr ? home : ".") / ".local" / "state" / "daqflow" /
          "runs.sqlite")
      .string();
}

}  // namespace daqflow::control
