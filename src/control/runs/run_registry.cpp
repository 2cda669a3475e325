// The run registry (run_registry.hpp) on an SQLite file or a PostgreSQL server
// (sql_connection.hpp). Every change is one write transaction, which has the registry to itself:
// controllers sharing it never get the same number. The schema carries its version and is
// brought up to date on open.
#include "daqflow/control/run_registry.hpp"

#include <cstdlib>
#include <filesystem>
#include <utility>

#include "sql_connection.hpp"

namespace daqflow::control {

namespace {

using nlohmann::json;
using sql::Row;
using sql::Value;

// Version k's statements bring a registry of version k - 1 to k; {identity}, {real}, {order} are
// the dialect's (sql_connection.hpp).
constexpr std::string_view kMigrations[] = {
    // 1: runs, their transitions, files and comments.
    R"sql(
      CREATE TABLE runs (
        id {identity},
        number BIGINT NOT NULL,
        state TEXT NOT NULL,
        config_name TEXT NOT NULL,
        config_path TEXT NOT NULL,
        config_text TEXT NOT NULL,
        version TEXT NOT NULL,
        host TEXT NOT NULL,
        user_name TEXT NOT NULL,
        started_ms BIGINT NOT NULL,
        stopped_ms BIGINT,
        summary TEXT);
      CREATE INDEX runs_by_number ON runs (number);
      CREATE TABLE transitions ({order}
        run_id BIGINT NOT NULL REFERENCES runs (id),
        at_ms BIGINT NOT NULL,
        transition TEXT NOT NULL,
        application TEXT NOT NULL,
        outcome TEXT NOT NULL,
        duration_ms {real} NOT NULL,
        reason TEXT NOT NULL);
      CREATE TABLE files ({order}
        run_id BIGINT NOT NULL REFERENCES runs (id),
        path TEXT NOT NULL,
        bytes BIGINT NOT NULL,
        checksum TEXT NOT NULL);
      CREATE TABLE comments ({order}
        run_id BIGINT NOT NULL REFERENCES runs (id),
        at_ms BIGINT NOT NULL,
        user_name TEXT NOT NULL,
        text TEXT NOT NULL);
    )sql",
    // 2: which application on which host wrote a file, and its events; the controller's process.
    R"sql(
      ALTER TABLE files ADD COLUMN application TEXT NOT NULL DEFAULT '';
      ALTER TABLE files ADD COLUMN host TEXT NOT NULL DEFAULT '';
      ALTER TABLE files ADD COLUMN events BIGINT NOT NULL DEFAULT 0;
      ALTER TABLE runs ADD COLUMN controller_pid BIGINT NOT NULL DEFAULT 0;
    )sql",
};
static_assert(std::size(kMigrations) == kRunRegistrySchema);

std::string in_dialect(std::string_view statements, const sql::Dialect& d) {
  std::string out(statements);
  const auto put = [&](std::string_view key, std::string_view value) {
    for (auto at = out.find(key); at != std::string::npos; at = out.find(key, at + value.size())) {
      out.replace(at, key.size(), value);
    }
  };
  put("{identity}", d.identity);
  put("{real}", d.real);
  put("{order}", d.order_definition);
  return out;
}

// The row of a number's last run.
constexpr std::string_view kRunId = "(SELECT MAX(id) FROM runs WHERE number = ?1)";

constexpr std::string_view kRunColumns =
    "SELECT number, state, config_name, config_path, config_text, version, host, user_name, "
    "started_ms, stopped_ms, summary, controller_pid FROM runs";

RunRecord record_of(const Row& q) {
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
  r.controller_pid = q.integer(11);
  return r;
}

Error no_run(std::uint32_t run) {
  return Error(ErrorCode::not_found, "no run " + std::to_string(run) + " in the registry");
}

class SqlRegistry final : public RunRegistry {
 public:
  SqlRegistry(std::unique_ptr<sql::Connection> db, std::string location)
      : db_(std::move(db)), location_(std::move(location)) {}

  Result<void> migrate() {
    return in_transaction([&]() -> Result<void> {
      if (auto r = db_->exec("CREATE TABLE IF NOT EXISTS registry "
                             "(key TEXT PRIMARY KEY, value BIGINT NOT NULL)");
          !r) {
        return r;
      }
      auto version = setting("schema", 0);
      if (!version) return version.error();
      if (*version > kRunRegistrySchema) {
        return Error(ErrorCode::conflict,
                     location_ + ": the run registry's schema is version " +
                         std::to_string(*version) + ", newer than this daqflow's (" +
                         std::to_string(kRunRegistrySchema) + "): use a newer daqflow");
      }
      for (auto v = *version; v < kRunRegistrySchema; ++v) {
        if (auto r = db_->exec(in_dialect(kMigrations[v], db_->dialect())); !r) return r;
      }
      return put_setting("schema", kRunRegistrySchema);
    });
  }

  Result<std::uint32_t> begin_run(const RunStart& s) override {
    std::uint32_t number = 0;
    auto r = in_transaction([&]() -> Result<void> {
      auto next = setting("next_number", 1);
      if (!next) return next.error();
      if (s.number) {
        number = *s.number;
        auto seen = query("SELECT config_name FROM runs WHERE number = ?1 ORDER BY id DESC",
                          {std::int64_t{number}});
        if (!seen) return seen.error();
        if (!seen->empty() && !s.reuse) {
          return Error(ErrorCode::conflict,
                       "run " + std::to_string(number) + " was run before (configuration '" +
                           seen->front().text(0) +
                           "'): leave run.number out of the configuration for the registry's " +
                           "next number, or reuse it on purpose");
        }
      } else {
        if (*next > 0xFFFFFFFFLL) return Error(ErrorCode::conflict, "run numbers are used up");
        number = static_cast<std::uint32_t>(*next);
      }
      auto added = query(
          "INSERT INTO runs (number, state, config_name, config_path, config_text, version, host, "
          "user_name, started_ms, controller_pid) "
          "VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
          {std::int64_t{number}, s.config_name, s.config_path, s.config_text, s.version, s.host,
           s.user, s.started_ms, s.controller_pid});
      if (!added) return added.error();
      return put_setting("next_number", std::max<std::int64_t>(*next, std::int64_t{number} + 1));
    });
    if (!r) return r.error();
    return number;
  }

  Result<void> add_transitions(std::uint32_t run,
                               const std::vector<TransitionRecord>& transitions) override {
    return in_transaction([&]() -> Result<void> {
      for (const auto& t : transitions) {
        auto r = query(
            "INSERT INTO transitions (run_id, at_ms, transition, application, "
            "outcome, duration_ms, reason) VALUES (" +
                std::string(kRunId) + ", ?2, ?3, ?4, ?5, ?6, ?7)",
            {std::int64_t{run}, t.at_ms, t.transition, t.application, t.outcome, t.duration_ms,
             t.reason});
        if (!r) return r.error();
      }
      return ok();
    });
  }

  Result<void> add_files(std::uint32_t run, const std::vector<RunFile>& files) override {
    return in_transaction([&]() -> Result<void> {
      for (const auto& f : files) {
        auto r = query(
            "INSERT INTO files (run_id, path, bytes, checksum, application, host, "
            "events) VALUES (" +
                std::string(kRunId) + ", ?2, ?3, ?4, ?5, ?6, ?7)",
            {std::int64_t{run}, f.path, static_cast<std::int64_t>(f.bytes), f.checksum,
             f.application, f.host, static_cast<std::int64_t>(f.events)});
        if (!r) return r.error();
      }
      return ok();
    });
  }

  Result<void> end_run(std::uint32_t run, std::string_view state, std::int64_t stopped_ms,
                       const json& summary) override {
    return update_run(
        run, "state = ?2, stopped_ms = ?3, summary = ?4",
        {std::string(state), stopped_ms, summary.is_null() ? std::string() : summary.dump()});
  }

  Result<void> set_state(std::uint32_t run, std::string_view state) override {
    return update_run(run, "state = ?2", {std::string(state)});
  }

  Result<void> comment(std::uint32_t run, const RunComment& c) override {
    return in_transaction([&]() -> Result<void> {
      if (auto known = exists(run); !known) return known.error();
      auto r = query("INSERT INTO comments (run_id, at_ms, user_name, text) VALUES (" +
                         std::string(kRunId) + ", ?2, ?3, ?4)",
                     {std::int64_t{run}, c.at_ms, c.user, c.text});
      if (!r) return r.error();
      return ok();
    });
  }

  Result<std::vector<RunRecord>> list(const RunFilter& f) override {
    const auto optional = [](std::optional<std::int64_t> v) -> Value {
      if (v) return *v;
      return nullptr;
    };
    auto rows = query(std::string(kRunColumns) +
                          " WHERE (CAST(?1 AS BIGINT) IS NULL OR started_ms >= ?1) AND "
                          "(CAST(?2 AS BIGINT) IS NULL OR started_ms < ?2) AND (?3 = '' OR "
                          "state = ?3) AND (?4 = '' OR config_name = ?4) ORDER BY id DESC LIMIT ?5",
                      {optional(f.since_ms), optional(f.until_ms), f.state, f.config_name,
                       static_cast<std::int64_t>(f.limit)});
    if (!rows) return rows.error();
    std::vector<RunRecord> out;
    for (const auto& row : *rows) out.push_back(record_of(row));
    return out;
  }

  Result<RunRecord> show(std::uint32_t run) override {
    const Value number = std::int64_t{run};
    auto rows = query(std::string(kRunColumns) + " WHERE id = " + std::string(kRunId), {number});
    if (!rows) return rows.error();
    if (rows->empty()) return no_run(run);
    RunRecord r = record_of(rows->front());
    const std::string of_run = " WHERE run_id = " + std::string(kRunId) + " ORDER BY " +
                               std::string(db_->dialect().order_column);
    auto transitions = query(
        "SELECT at_ms, transition, application, outcome, duration_ms, reason FROM transitions" +
            of_run,
        {number});
    if (!transitions) return transitions.error();
    for (const auto& t : *transitions) {
      r.transitions.push_back(
          {t.integer(0), t.text(1), t.text(2), t.text(3), t.real(4), t.text(5)});
    }
    auto files = query(
        "SELECT path, bytes, checksum, application, host, events FROM files" + of_run, {number});
    if (!files) return files.error();
    for (const auto& f : *files) {
      r.files.push_back({f.text(0), static_cast<std::uint64_t>(f.integer(1)), f.text(2), f.text(3),
                         f.text(4), static_cast<std::uint64_t>(f.integer(5))});
    }
    auto comments = query("SELECT at_ms, user_name, text FROM comments" + of_run, {number});
    if (!comments) return comments.error();
    for (const auto& c : *comments) r.comments.push_back({c.integer(0), c.text(1), c.text(2)});
    return r;
  }

  [[nodiscard]] const std::string& location() const override { return location_; }

 private:
  Result<std::vector<Row>> query(const std::string& statement, const std::vector<Value>& params) {
    return db_->query(statement, params);
  }

  // Runs `body` in a write transaction: committed when it succeeds, rolled back when it fails.
  template <typename Body>
  Result<void> in_transaction(Body body) {
    if (auto r = db_->begin_write(); !r) return r;
    auto r = body();
    if (!r) {
      (void)db_->rollback();
      return r;
    }
    return db_->commit();
  }

  Result<void> update_run(std::uint32_t run, std::string_view set, std::vector<Value> values) {
    return in_transaction([&]() -> Result<void> {
      if (auto known = exists(run); !known) return known.error();
      values.insert(values.begin(), std::int64_t{run});
      auto r = query("UPDATE runs SET " + std::string(set) + " WHERE id = " + std::string(kRunId),
                     values);
      if (!r) return r.error();
      return ok();
    });
  }

  Result<void> exists(std::uint32_t run) {
    auto rows = query("SELECT 1 FROM runs WHERE number = ?1", {std::int64_t{run}});
    if (!rows) return rows.error();
    if (rows->empty()) return no_run(run);
    return ok();
  }

  Result<std::int64_t> setting(std::string_view key, std::int64_t fallback) {
    auto rows = query("SELECT value FROM registry WHERE key = ?1", {std::string(key)});
    if (!rows) return rows.error();
    return rows->empty() ? fallback : rows->front().integer(0);
  }
  Result<void> put_setting(std::string_view key, std::int64_t value) {
    auto r = query(
        "INSERT INTO registry (key, value) VALUES (?1, ?2) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        {std::string(key), value});
    if (!r) return r.error();
    return ok();
  }

  std::unique_ptr<sql::Connection> db_;
  std::string location_;
};

}  // namespace

Result<std::unique_ptr<RunRegistry>> RunRegistry::open(const std::string& location) {
  auto db = sql::is_postgres(location) ? sql::open_postgres(location) : sql::open_sqlite(location);
  if (!db) return db.error();
  auto registry = std::make_unique<SqlRegistry>(std::move(*db), sql::redacted(location));
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
