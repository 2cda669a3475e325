#pragma once
// The run registry: every run `daqflow run` starts gets its number here, never used twice, and
// the registry keeps what made the run and what became of it: the whole resolved configuration,
// daqflow's version and build, host and user, start and stop, the final state and summary, each
// transition of each application, the files written, and operators' comments.
//
// The registry is a database: an SQLite file by default (docs/operations.md says where), or a
// PostgreSQL server named by a URI ("postgresql://user@host/db"). Several controllers may share
// it: a run's number is taken in one write transaction.
//
//   auto registry = control::RunRegistry::open(control::default_registry_location());
//   auto number = (*registry)->begin_run(start);   // the next number, or start.number
//   ...
//   (*registry)->end_run(*number, "ended", summary);

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/control/transition_record.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::control {

// A run as it starts.
struct RunStart {
  // The configuration's own number; none: the registry's next one.
  std::optional<std::uint32_t> number;
  bool reuse = false;           // an explicit number that was run before is taken again
  std::string config_name;      // the configuration file's stem ("local")
  std::string config_path;      // where it was read from
  std::string config_text;      // the configuration as the run used it, whole
  std::string version;          // daqflow's version and build id
  std::string host;             // where the controller ran
  std::string user;             // who ran it
  std::int64_t started_ms = 0;  // Unix time
  std::int64_t controller_pid = 0;
};

// An output file of the run.
struct RunFile {
  std::string path;
  std::uint64_t bytes = 0;
  std::string checksum;     // "crc32c:89abcdef"
  std::string application;  // the application that wrote it
  std::string host;         // where the file is
  std::uint64_t events = 0;
};

struct RunComment {
  std::int64_t at_ms = 0;
  std::string user;
  std::string text;
};

// A run as the registry has it.
struct RunRecord {
  std::uint32_t number = 0;
  std::string state;  // running, ended, failed, controller_died
  std::string config_name;
  std::string config_path;
  std::string config_text;
  std::string version;
  std::string host;
  std::string user;
  std::int64_t started_ms = 0;
  std::optional<std::int64_t> stopped_ms;
  std::int64_t controller_pid = 0;  // on host
  nlohmann::json summary;           // null until the run ended
  // Filled by show() only:
  std::vector<TransitionRecord> transitions;
  std::vector<RunFile> files;
  std::vector<RunComment> comments;
};

// Which runs list() gives, newest first.
struct RunFilter {
  std::optional<std::int64_t> since_ms;  // started at or after
  std::optional<std::int64_t> until_ms;  // started before
  std::string state;                     // empty: any
  std::string config_name;               // empty: any
  std::size_t limit = 50;
};

class RunRegistry {
 public:
  virtual ~RunRegistry() = default;

  // Opens the registry at `location` (a PostgreSQL URI, or an SQLite file, created with its
  // folder when missing),
  // bringing its schema up to this daqflow's version. A registry written by a newer daqflow is
  // refused; so is one that cannot be opened, with the location in the message.
  [[nodiscard]] static Result<std::unique_ptr<RunRegistry>> open(const std::string& location);

  // Records a run's start and returns its number: start.number when given (refused with
  // ErrorCode::conflict when that number was run before, unless start.reuse), else one above the
  // highest number the registry ever gave or took.
  [[nodiscard]] virtual Result<std::uint32_t> begin_run(const RunStart& start) = 0;
  [[nodiscard]] virtual Result<void> add_transitions(
      std::uint32_t run, const std::vector<TransitionRecord>& transitions) = 0;
  [[nodiscard]] virtual Result<void> add_files(std::uint32_t run,
                                               const std::vector<RunFile>& files) = 0;
  // Records the end: the final state and the summary (null when there is none).
  [[nodiscard]] virtual Result<void> end_run(std::uint32_t run, std::string_view state,
                                             std::int64_t stopped_ms,
                                             const nlohmann::json& summary) = 0;
  // A run that ends under another controller (`daqflow run --attach`) or was left running.
  [[nodiscard]] virtual Result<void> set_state(std::uint32_t run, std::string_view state) = 0;
  [[nodiscard]] virtual Result<void> comment(std::uint32_t run, const RunComment& comment) = 0;

  [[nodiscard]] virtual Result<std::vector<RunRecord>> list(const RunFilter& filter) = 0;
  // Everything recorded of run `run` (ErrorCode::not_found when there is no such run); of a
  // number run more than once (start.reuse), the last.
  [[nodiscard]] virtual Result<RunRecord> show(std::uint32_t run) = 0;

  [[nodiscard]] virtual const std::string& location() const = 0;
};

// The schema version this daqflow writes.
inline constexpr int kRunRegistrySchema = 2;

// Where the registry is when nothing names it: DAQFLOW_RUNS_DB, else
// $XDG_STATE_HOME/daqflow/runs.sqlite, else ~/.local/state/daqflow/runs.sqlite.
[[nodiscard]] std::string default_registry_location();

}  // namespace daqflow::control
