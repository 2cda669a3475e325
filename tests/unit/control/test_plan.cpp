#include <gtest/gtest.h>

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

TEST(TargetState, EachCommandLeadsToItsStableState) {
  EXPECT_EQ(*target_state("Configure"), "Ready");
  EXPECT_EQ(*target_state("Enable"), "Enabled");
  EXPECT_EQ(*target_state("Suspend"), "Suspended");
  EXPECT_EQ(*target_state("Resume"), "Enabled");
  EXPECT_EQ(*target_state("Halt"), "Halted");
  EXPECT_EQ(*target_state("Reset"), "Halted");
}

TEST(TargetState, UnknownCommandIsAnErrorListingTheCommands) {
  const auto r = target_state("Start");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("'Start'"), std::string::npos);
  EXPECT_NE(r.error().message().find("Configure"), std::string::npos);
}

TEST(States, TransitionalAndHaltable) {
  for (const char* s : {"Configuring", "Enabling", "Suspending", "Resuming", "Halting"}) {
    EXPECT_TRUE(is_transitional(s)) << s;
    EXPECT_FALSE(can_halt(s)) << s;
  }
  for (const char* s : {"Ready", "Enabled", "Suspended"}) {
    EXPECT_FALSE(is_transitional(s)) << s;
    EXPECT_TRUE(can_halt(s)) << s;
  }
  EXPECT_FALSE(can_halt("Halted"));
  EXPECT_FALSE(can_halt("Failed"));
}

TEST(ExecCommand, NamesEveryContextOfTheGroup) {
  const std::vector<std::string> expected{"/bin/daqflow", "exec", "/etc/c.yaml", "--context", "a",
                                          "--context",    "b"};
  EXPECT_EQ(exec_command("/bin/daqflow", "/etc/c.yaml", {"a", "b"}), expected);
}

}  // namespace
}  // namespace daqflow::control
