// Every example configuration loads, and its inproc variant runs in one process, as the
// examples' comments promise.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "daqflow/apps/builtin.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::apps {
namespace {

namespace fs = std::filesystem;

fs::path examples_dir() {
  return fs::path(__FILE__).parent_path().parent_path().parent_path().parent_path() / "examples";
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ExamplesTest : public ::testing::Test {
 protected:
  ExamplesTest() { register_builtin_apps(registry); }
  runtime::AppRegistry registry;
};

TEST_F(ExamplesTest, EveryExampleLoads) {
  std::size_t n = 0;
  for (const auto& entry : fs::directory_iterator(examples_dir())) {
    if (entry.path().extension() != ".yaml") continue;
    ++n;
    const auto config = runtime::load_config(entry.path().string(), registry);
    EXPECT_TRUE(config) << (config ? "" : config.error().message());
  }
  EXPECT_GE(n, 4u);
}

TEST_F(ExamplesTest, BenchmarkExamplesHaveTheirShape) {
  struct Shape {
    const char* file;
    std::size_t sources, sinks, roundtrips;
  };
  for (const Shape& s : {Shape{"roundtrip.yaml", 0, 0, 2}, Shape{"stream-1to1.yaml", 1, 1, 0},
                         Shape{"stream-3to1.yaml", 3, 1, 0}, Shape{"stream-1to3.yaml", 1, 3, 0}}) {
    const auto config = runtime::load_config((examples_dir() / s.file).string(), registry);
    ASSERT_TRUE(config) << config.error().message();
    std::size_t sources = 0, sinks = 0, roundtrips = 0;
    for (const auto& app : config->applications) {
      sources += app.type == "source" ? 1 : 0;
      sinks += app.type == "sink" ? 1 : 0;
      roundtrips += app.type == "roundtrip" ? 1 : 0;
      if (app.type == "source") {
        EXPECT_EQ(app.params["message_size"], 1048576) << s.file;
      }
    }
    EXPECT_EQ(sources, s.sources) << s.file;
    EXPECT_EQ(sinks, s.sinks) << s.file;
    EXPECT_EQ(roundtrips, s.roundtrips) << s.file;
    EXPECT_EQ(config->contexts.size(), s.sources + s.sinks + s.roundtrips) << s.file;
    EXPECT_EQ(config->transports.default_transport, "tcp") << s.file;
    EXPECT_EQ(config->process_groups(registry).size(), config->contexts.size())
        << s.file << ": over tcp every context is its own process";
  }
}

TEST_F(ExamplesTest, InprocVariantsRunInOneProcess) {
  for (const char* file :
       {"roundtrip.yaml", "stream-1to1.yaml", "stream-3to1.yaml", "stream-1to3.yaml"}) {
    std::string text = read(examples_dir() / file);
    const std::string tcp = "default: tcp";
    const auto at = text.find(tcp, text.find("transports:"));
    ASSERT_NE(at, std::string::npos) << file;
    text.replace(at, tcp.size(), "default: inproc");
    const auto config = runtime::parse_config(text, file, registry);
    ASSERT_TRUE(config) << config.error().message();
    EXPECT_EQ(config->process_groups(registry).size(), 1u) << file;
  }
}

}  // namespace
}  // namespace daqflow::apps
