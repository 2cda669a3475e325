#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "daqflow/control/run_registry.hpp"

namespace daqflow::control {
namespace {

namespace fs = std::filesystem;

class RunRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("daqflow-registry-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    location_ = (dir_ / "state" / "runs.sqlite").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<RunRegistry> open() {
    auto r = RunRegistry::open(location_);
    EXPECT_TRUE(r) << (r ? "" : r.error().message());
    return r ? std::move(*r) : nullptr;
  }

  static RunStart start(std::string config, std::int64_t at_ms) {
    RunStart s;
    s.config_name = std::move(config);
    s.config_path = "/configs/" + s.config_name + ".yaml";
    s.config_text = "run: {output: ./run-data}\n";
    s.version = "0.1.0 (test)";
    s.host = "daq01";
    s.user = "shifter";
    s.started_ms = at_ms;
    return s;
  }

  fs::path dir_;
  std::string location_;
};

TEST_F(RunRegistryTest, NumbersFollowEachOtherAndAreNeverGivenTwice) {
  auto registry = open();
  ASSERT_TRUE(registry);
  EXPECT_TRUE(fs::exists(location_)) << "the file and its folder are created";
  EXPECT_EQ(*registry->begin_run(start("local", 1000)), 1U);
  EXPECT_EQ(*registry->begin_run(start("local", 2000)), 2U);

  // A number the configuration gives is taken as it is, and the next ones go above it.
  auto explicit_start = start("cms", 3000);
  explicit_start.number = 350000;
  EXPECT_EQ(*registry->begin_run(explicit_start), 350000U);
  EXPECT_EQ(*registry->begin_run(start("local", 4000)), 350001U);

  // A number run before is refused, unless taken again on purpose.
  auto again = registry->begin_run(explicit_start);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), ErrorCode::conflict);
  EXPECT_NE(again.error().message().find("run 350000 was run before"), std::string::npos)
      << again.error().message();
  explicit_start.reuse = true;
  EXPECT_EQ(*registry->begin_run(explicit_start), 350000U);

  // Reopened, the registry goes on where it was.
  registry.reset();
  registry = open();
  EXPECT_EQ(*registry->begin_run(start("local", 5000)), 350002U);
}

TEST_F(RunRegistryTest, ShowGivesEverythingRecorded) {
  auto registry = open();
  ASSERT_TRUE(registry);
  const auto number = *registry->begin_run(start("local", 1000));
  ASSERT_TRUE(registry->add_transitions(
      number, {{1100, "configure", "evm", "ok", 12.5, ""},
               {1100, "configure", "bu1", "failed", 3.0, "output: disk full"}}));
  ASSERT_TRUE(registry->add_files(
      number, {{"/data/run000001_bu1_0001.dqf", 4096, "crc32c:00000001", "bu1", "daq02", 3}}));
  ASSERT_TRUE(registry->comment(number, {1500, "shifter", "beam dump at 14:02"}));
  const nlohmann::json summary = {{"status", "failed"}, {"results", {{"events_built", 42}}}};
  ASSERT_TRUE(registry->end_run(number, "failed", 2000, summary));

  auto r = registry->show(number);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->number, number);
  EXPECT_EQ(r->state, "failed");
  EXPECT_EQ(r->config_name, "local");
  EXPECT_EQ(r->config_path, "/configs/local.yaml");
  EXPECT_EQ(r->config_text, "run: {output: ./run-data}\n");
  EXPECT_EQ(r->version, "0.1.0 (test)");
  EXPECT_EQ(r->host, "daq01");
  EXPECT_EQ(r->user, "shifter");
  EXPECT_EQ(r->started_ms, 1000);
  ASSERT_TRUE(r->stopped_ms);
  EXPECT_EQ(*r->stopped_ms, 2000);
  EXPECT_EQ(r->summary, summary);
  ASSERT_EQ(r->transitions.size(), 2U);
  EXPECT_EQ(r->transitions[1].application, "bu1");
  EXPECT_EQ(r->transitions[1].outcome, "failed");
  EXPECT_EQ(r->transitions[1].reason, "output: disk full");
  EXPECT_DOUBLE_EQ(r->transitions[0].duration_ms, 12.5);
  ASSERT_EQ(r->files.size(), 1U);
  EXPECT_EQ(r->files[0].path, "/data/run000001_bu1_0001.dqf");
  EXPECT_EQ(r->files[0].bytes, 4096U);
  EXPECT_EQ(r->files[0].checksum, "crc32c:00000001");
  EXPECT_EQ(r->files[0].application, "bu1");
  EXPECT_EQ(r->files[0].host, "daq02");
  EXPECT_EQ(r->files[0].events, 3U);
  ASSERT_EQ(r->comments.size(), 1U);
  EXPECT_EQ(r->comments[0].text, "beam dump at 14:02");

  auto missing = registry->show(99);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::not_found);
  EXPECT_EQ(registry->comment(99, {1, "x", "y"}).error().code(), ErrorCode::not_found);
}

TEST_F(RunRegistryTest, ListFiltersNewestFirst) {
  auto registry = open();
  ASSERT_TRUE(registry);
  for (int i = 0; i < 5; ++i) {
    const auto n = *registry->begin_run(start(i % 2 == 0 ? "local" : "cms", 1000 * (i + 1)));
    if (i < 4) {
      ASSERT_TRUE(registry->end_run(n, i == 1 ? "failed" : "ended", 1000 * i + 1500, {}));
    }
  }
  auto all = registry->list({});
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 5U);
  EXPECT_EQ(all->front().number, 5U);
  EXPECT_EQ(all->front().state, "running");
  EXPECT_FALSE(all->front().stopped_ms);
  EXPECT_TRUE(all->front().summary.is_null());

  RunFilter local;
  local.config_name = "local";
  EXPECT_EQ(registry->list(local)->size(), 3U);
  RunFilter failed;
  failed.state = "failed";
  ASSERT_EQ(registry->list(failed)->size(), 1U);
  EXPECT_EQ(registry->list(failed)->front().number, 2U);
  RunFilter window;
  window.since_ms = 2000;
  window.until_ms = 4000;
  EXPECT_EQ(registry->list(window)->size(), 2U);
  RunFilter two;
  two.limit = 2;
  EXPECT_EQ(registry->list(two)->size(), 2U);
}

// Controllers sharing one registry file, each a process taking numbers at the same time.
TEST_F(RunRegistryTest, ControllersAtTheSameMomentGetDistinctNumbers) {
  ASSERT_TRUE(open());  // created before the race, as the first controller would
  constexpr int kControllers = 4;
  constexpr int kRuns = 25;
  std::vector<pid_t> children;
  for (int c = 0; c < kControllers; ++c) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto r = RunRegistry::open(location_);
      if (!r) ::_exit(2);
      for (int i = 0; i < kRuns; ++i) {
        if (!(*r)->begin_run(start("race", i))) ::_exit(3);
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  RunFilter all;
  all.limit = 1000;
  auto runs = open()->list(all);
  ASSERT_TRUE(runs);
  std::set<std::uint32_t> numbers;
  for (const auto& r : *runs) numbers.insert(r.number);
  EXPECT_EQ(runs->size(), std::size_t{kControllers * kRuns});
  EXPECT_EQ(numbers.size(), runs->size()) << "a number given twice";
  EXPECT_EQ(*numbers.begin(), 1U);
  EXPECT_EQ(*numbers.rbegin(), std::uint32_t{kControllers * kRuns});
}

TEST_F(RunRegistryTest, ARegistryFromANewerDaqflowIsRefused) {
  ASSERT_TRUE(open());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(location_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE registry SET value = 99 WHERE key = 'schema'", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto r = RunRegistry::open(location_);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("schema is version 99"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find(location_), std::string::npos) << r.error().message();
}

// A registry of schema version 1 (as the first daqflow with a registry wrote it) is brought up to
// date on open, its runs kept.
TEST_F(RunRegistryTest, AnOlderSchemaIsMigratedOnOpen) {
  fs::create_directories(fs::path(location_).parent_path());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(location_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, R"sql(
      CREATE TABLE registry (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
      INSERT INTO registry VALUES ('schema', 1), ('next_number', 8);
      CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, number INTEGER NOT NULL,
        state TEXT NOT NULL, config_name TEXT NOT NULL, config_path TEXT NOT NULL,
        config_text TEXT NOT NULL, version TEXT NOT NULL, host TEXT NOT NULL,
        user_name TEXT NOT NULL, started_ms INTEGER NOT NULL, stopped_ms INTEGER, summary TEXT);
      CREATE INDEX runs_by_number ON runs (number);
      CREATE TABLE transitions (run_id INTEGER NOT NULL REFERENCES runs (id),
        at_ms INTEGER NOT NULL, transition TEXT NOT NULL, application TEXT NOT NULL,
        outcome TEXT NOT NULL, duration_ms REAL NOT NULL, reason TEXT NOT NULL);
      CREATE TABLE files (run_id INTEGER NOT NULL REFERENCES runs (id), path TEXT NOT NULL,
        bytes INTEGER NOT NULL, checksum TEXT NOT NULL);
      CREATE TABLE comments (run_id INTEGER NOT NULL REFERENCES runs (id),
        at_ms INTEGER NOT NULL, user_name TEXT NOT NULL, text TEXT NOT NULL);
      INSERT INTO runs (number, state, config_name, config_path, config_text, version, host,
        user_name, started_ms, stopped_ms, summary)
        VALUES (7, 'ended', 'local', '/c/local.yaml', 'run: {}', '0.1.0', 'daq01', 'shifter',
                1000, 2000, '');
      INSERT INTO files VALUES (1, '/data/run000007_bu1_0000.dqf', 10, 'crc32c:0000000a');
    )sql",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);

  auto registry = open();
  ASSERT_TRUE(registry);
  auto old = registry->show(7);
  ASSERT_TRUE(old) << old.error().message();
  EXPECT_EQ(old->state, "ended");
  ASSERT_EQ(old->files.size(), 1U);
  EXPECT_EQ(old->files[0].bytes, 10U);
  EXPECT_EQ(old->files[0].host, "") << "a column added by the migration, empty for old rows";
  EXPECT_EQ(*registry->begin_run(start("local", 3000)), 8U);
  ASSERT_TRUE(registry->add_files(8, {{"/data/f", 1, "crc32c:00000001", "bu1", "daq01", 1}}));
  EXPECT_EQ(registry->show(8)->files.at(0).application, "bu1");
}

TEST_F(RunRegistryTest, AnUnreachableRegistryIsAClearError) {
  fs::create_directories(dir_);
  const fs::path file = dir_ / "a-file";
  { std::ofstream(file) << "x"; }
  auto r = RunRegistry::open((file / "runs.sqlite").string());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::unavailable);
  EXPECT_NE(r.error().message().find(file.string()), std::string::npos) << r.error().message();
}

// Sets an environment variable for a test's time, and puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(RunRegistryLocation, TheEnvironmentChoosesTheFile) {
  const ScopedEnv db("DAQFLOW_RUNS_DB", nullptr);
  const ScopedEnv state("XDG_STATE_HOME", nullptr);
  const ScopedEnv home("HOME", "/home/shifter");
  ::setenv("DAQFLOW_RUNS_DB", "/srv/daq/runs.sqlite", 1);
  EXPECT_EQ(default_registry_location(), "/srv/daq/runs.sqlite");
  ::unsetenv("DAQFLOW_RUNS_DB");
  ::setenv("XDG_STATE_HOME", "/home/shifter/.state", 1);
  EXPECT_EQ(default_registry_location(), "/home/shifter/.state/daqflow/runs.sqlite");
  ::unsetenv("XDG_STATE_HOME");
  EXPECT_EQ(default_registry_location(), "/home/shifter/.local/state/daqflow/runs.sqlite");
}

}  // namespace
}  // namespace daqflow::control
