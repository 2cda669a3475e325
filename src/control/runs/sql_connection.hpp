#pragma once
// A connection to the database that holds the run registry: an SQLite file or a PostgreSQL
// server. The registry's statements are written once, with numbered parameters (?1, ?2, ...),
// and run on either; what differs between the two (the schema's identity column, how a write
// transaction takes the registry for itself) is the dialect's.
//
// Threading: one connection is used by one thread at a time.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "daqflow/core/result.hpp"

namespace daqflow::control::sql {

// A parameter: null, an integer, a floating-point number or text.
using Value = std::variant<std::nullptr_t, std::int64_t, double, std::string>;

// A row of a result: each column's text (numbers in decimal), none for null.
class Row {
 public:
  explicit Row(std::vector<std::optional<std::string>> columns) : columns_(std::move(columns)) {}
  [[nodiscard]] bool null(std::size_t col) const { return !columns_.at(col).has_value(); }
  [[nodiscard]] std::string text(std::size_t col) const { return columns_.at(col).value_or(""); }
  [[nodiscard]] std::int64_t integer(std::size_t col) const;
  [[nodiscard]] double real(std::size_t col) const;

 private:
  std::vector<std::optional<std::string>> columns_;
};

// What the schema and transactions say differently on each database.
struct Dialect {
  std::string_view identity;  // a table's own row number: "INTEGER PRIMARY KEY AUTOINCREMENT"
  std::string_view real;      // a double-precision column
  // A column that orders a table's rows as they were added (SQLite's rowid; a sequence on
  // PostgreSQL, whose tables then carry it).
  std::string_view order_column;
  std::string_view order_definition;  // "" or "seq BIGSERIAL PRIMARY KEY,"
};

class Connection {
 public:
  virtual ~Connection() = default;
  [[nodiscard]] virtual const Dialect& dialect() const = 0;
  // Statements without parameters or rows, several separated by ';' (the schema's).
  [[nodiscard]] virtual Result<void> exec(std::string_view sql) = 0;
  // One statement with parameters ?1..?N, params[0] being ?1; its rows.
  [[nodiscard]] virtual Result<std::vector<Row>> query(std::string_view sql,
                                                       const std::vector<Value>& params) = 0;
  // A write transaction that has the registry to itself until commit() or rollback(): a second
  // connection's begin_write() waits for it.
  [[nodiscard]] virtual Result<void> begin_write() = 0;
  [[nodiscard]] Result<void> commit() { return exec("COMMIT"); }
  [[nodiscard]] Result<void> rollback() { return exec("ROLLBACK"); }
};

// An SQLite file, created with its folder when missing.
[[nodiscard]] Result<std::unique_ptr<Connection>> open_sqlite(const std::string& path);
// A PostgreSQL server, by a libpq connection URI or keyword string.
[[nodiscard]] Result<std::unique_ptr<Connection>> open_postgres(const std::string& conninfo);

// Whether a registry location names a PostgreSQL server ("postgresql://..." or "postgres://...").
[[nodiscard]] bool is_postgres(std::string_view location);
// The location as messages show it: a password in a URI replaced by "***".
[[nodiscard]] std::string redacted(std::string_view location);

}  // namespace daqflow::control::sql
