#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "control/app_types.hpp"
#include "daqflow/control/plan.hpp"

namespace daqflow::control {
namespace {

using testing::app_type;

runtime::ClusterConfig cluster_of(const std::vector<std::pair<std::string, std::string>>& apps) {
  runtime::ClusterConfig config;
  config.contexts.push_back(runtime::ContextConfig{});
  config.contexts[0].name = "ctx";
  for (const auto& [id, type] : apps) {
    runtime::ApplicationConfig a;
    a.index = static_cast<runtime::AppIndex>(config.applications.size());
    a.id = id;
    a.type = type;
    a.context = "ctx";
    config.contexts[0].applications.push_back(a.index);
    config.applications.push_back(a);
  }
  return config;
}

std::vector<std::vector<std::string>> ids(const std::vector<std::vector<PlannedApp>>& groups) {
  std::vector<std::vector<std::string>> out;
  for (const auto& g : groups) {
    out.emplace_back();
    for (const auto& a : g) out.back().push_back(a.id);
  }
  return out;
}

class PlanTest : public ::testing::Test {
 protected:
  PlanTest() {
    registry.add(app_type("sink", 0));
    registry.add(app_type("relay", 1));
    registry.add(app_type("source", 2));
  }
  runtime::AppRegistry registry;
};

TEST_F(PlanTest, EnablesConsumersBeforeProducersKeepingConfigurationOrderWithinARank) {
  const auto config = cluster_of({{"src0", "source"},
                                  {"snk1", "sink"},
                                  {"mid", "relay"},
                                  {"snk0", "sink"},
                                  {"src1", "source"}});
  const std::vector<std::vector<std::string>> expected{{"snk1", "snk0"}, {"mid"}, {"src0", "src1"}};
  EXPECT_EQ(ids(enable_order(config, registry)), expected);
  const auto groups = enable_order(config, registry);
  EXPECT_EQ(groups[0][0].rank, 0);
  EXPECT_EQ(groups[2][1].rank, 2);
  EXPECT_EQ(groups[1][0].context, "ctx");
}

TEST_F(PlanTest, HaltsProducersFirst) {
  const auto config = cluster_of({{"snk0", "sink"}, {"src0", "source"}, {"src1", "source"}});
  const std::vector<std::vector<std::string>> expected{{"src0", "src1"}, {"snk0"}};
  EXPECT_EQ(ids(halt_order(config, registry)), expected);
}

TEST_F(PlanTest, OneGroupWhenAllRanksAreEqual) {
  const auto config = cluster_of({{"a", "sink"}, {"b", "sink"}});
  EXPECT_EQ(enable_order(config, registry).size(), 1u);
  EXPECT_TRUE(enable_order(cluster_of({}), registry).empty());
}

TEST(ExecCommand, NamesEveryContextOfTheGroup) {
  const std::vector<std::string> expected{"/bin/daqflow", "exec", "/etc/c.yaml", "--context", "a",
                                          "--context",    "b"};
  EXPECT_EQ(exec_command("/bin/daqflow", "/etc/c.yaml", {"a", "b"}), expected);
}

// Contexts a, b, c, d with one application each; those named in mpi use the mpi transport.
runtime::ClusterConfig contexts_with_mpi(const std::vector<std::string>& mpi) {
  runtime::ClusterConfig config;
  for (const std::string name : {"a", "b", "c", "d"}) {
    runtime::ContextConfig ctx;
    ctx.name = name;
    runtime::ApplicationConfig app;
    app.index = static_cast<runtime::AppIndex>(config.applications.size());
    app.id = name + "0";
    app.type = "sink";
    app.context = name;
    app.transport = std::find(mpi.begin(), mpi.end(), name) != mpi.end() ? "mpi" : "tcp";
    ctx.applications.push_back(app.index);
    config.applications.push_back(app);
    config.contexts.push_back(ctx);
  }
  return config;
}

TEST(LaunchGroups, WithoutMpiTheProcessGroupsStay) {
  const auto config = contexts_with_mpi({});
  const std::vector<std::vector<std::string>> groups{{"a", "b"}, {"c"}, {"d"}};
  const auto launched = launch_groups(config, groups);
  ASSERT_TRUE(launched) << launched.error().message();
  EXPECT_EQ(*launched, groups);
}

TEST(LaunchGroups, TheMpiContextsBecomeOneGroupFirstInRankOrder) {
  const auto config = contexts_with_mpi({"d", "b"});
  EXPECT_EQ(config.mpi_contexts(), (std::vector<std::string>{"b", "d"}));  // file order
  const auto launched = launch_groups(config, {{"a"}, {"b"}, {"c"}, {"d"}});
  ASSERT_TRUE(launched) << launched.error().message();
  const std::vector<std::vector<std::string>> expected{{"b", "d"}, {"a"}, {"c"}};
  EXPECT_EQ(*launched, expected);
}

TEST(LaunchGroups, AnInprocLinkMayNotJoinAnMpiContextWithAnother) {
  const auto config = contexts_with_mpi({"b"});
  const auto launched = launch_groups(config, {{"a", "b"}, {"c"}, {"d"}});
  ASSERT_FALSE(launched);
  EXPECT_NE(launched.error().message().find("contexts b and a"), std::string::npos)
      << launched.error().message();
}

TEST(LaunchCommand, OneMpirunStartsARankPerMpiContext) {
  ::setenv("DAQFLOW_MPIRUN", "/opt/mpirun", 1);
  ::setenv("DAQFLOW_MPIRUN_ARGS", "--x 1", 1);
  const auto config = contexts_with_mpi({"b", "d"});
  const std::vector<std::string> expected{
      "/opt/mpirun", "--x",          "1",         "-np",     "1",         "/bin/daqflow",
      "exec",        "/c.yaml",      "--context", "b",       ":",         "-np",
      "1",           "/bin/daqflow", "exec",      "/c.yaml", "--context", "d"};
  EXPECT_EQ(launch_command("/bin/daqflow", "/c.yaml", {"b", "d"}, config), expected);
  // Groups without mpi start as they always did.
  EXPECT_EQ(launch_command("/bin/daqflow", "/c.yaml", {"a"}, config),
            exec_command("/bin/daqflow", "/c.yaml", {"a"}));
  ::unsetenv("DAQFLOW_MPIRUN");
  ::unsetenv("DAQFLOW_MPIRUN_ARGS");
}

TEST(LaunchCommand, RanksOfOneHostKeepTheirSharedMemorySegmentsInTheFolderGiven) {
  ::setenv("DAQFLOW_MPIRUN", "/opt/mpirun", 1);
  const auto config = contexts_with_mpi({"b"});
  const auto argv = launch_command("/bin/daqflow", "/c.yaml", {"b"}, config, {}, "/dev/shm/x");
  const auto at = std::find(argv.begin(), argv.end(), "btl_vader_backing_directory");
  ASSERT_NE(at, argv.end());
  EXPECT_EQ(*(at - 1), "--mca");
  EXPECT_EQ(*(at + 1), "/dev/shm/x");
  const auto plain = launch_command("/bin/daqflow", "/c.yaml", {"b"}, config);
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "btl_vader_backing_directory"), plain.end());
  ::unsetenv("DAQFLOW_MPIRUN");
}

}  // namespace
}  // namespace daqflow::control
