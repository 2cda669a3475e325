// What the launchers send to a host: the command line of an executive started elsewhere, the
// configuration on its stdin, words quoted for the remote shell; and run_command's collection of
// a tool's output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "daqflow/control/launcher.hpp"

namespace daqflow::control {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Launcher, ShellQuotingSurvivesEveryCharacter) {
  EXPECT_EQ(shell_quote("plain"), "'plain'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$HOME `x` \"y\""), "'$HOME `x` \"y\"'");
  // Round trip through a real shell.
  const std::string word = "a'b $c \\d \"e\" `f` ;g";
  auto r = run_command({"/bin/sh", "-c", "printf %s " + shell_quote(word)},
                       std::chrono::milliseconds(5000));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->status.clean());
  EXPECT_EQ(r->out, word);
}

TEST(Launcher, AnExecutiveElsewhereReadsItsConfigurationFromStdinAndIsLeased) {
  runtime::HostConfig host;
  host.addresses = {"10.0.0.2"};
  host.launcher = runtime::LauncherKind::ssh;
  host.workdir = "/srv/daq";
  host.lease_s = 9;
  const LaunchSettings settings{"/usr/bin/daqflow", "/etc/daq/run.yaml", "run: {}\n", "s3cret",
                                "/tmp/logs"};
  const LaunchRequest request{{"bu1", "bu2"}, {"--record", "/data/rec"}, "/tmp/logs/bu1.log"};
  EXPECT_THAT(remote_exec_command(host, settings, request),
              ElementsAre("/usr/bin/daqflow", "exec", "/etc/daq/run.yaml", "--config-stdin",
                          "--lease", "9", "--log-file", "/srv/daq/logs/bu1.log", "--context", "bu1",
                          "--context", "bu2", "--record", "/data/rec"));
  host.daqflow = "/opt/daqflow/bin/daqflow";
  host.log_dir = "/var/log/daq";
  const auto argv = remote_exec_command(host, settings, request);
  EXPECT_EQ(argv.front(), "/opt/daqflow/bin/daqflow");
  EXPECT_EQ(argv[7], "/var/log/daq/bu1.log");

  const std::string line = config_delivery(settings);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line";
  const auto bundle = nlohmann::json::parse(line);
  EXPECT_EQ(bundle["yaml"], "run: {}\n");
  EXPECT_EQ(bundle["token"], "s3cret");
  const LaunchSettings no_token{"/usr/bin/daqflow", "/etc/daq/run.yaml", "x", "", ""};
  EXPECT_TRUE(nlohmann::json::parse(config_delivery(no_token))["token"].is_null());
}

TEST(Launcher, RunCommandCollectsOutputAndEndsWhatOverstays) {
  auto r = run_command({"/bin/sh", "-c", "echo out; echo err >&2; exit 4"},
                       std::chrono::milliseconds(5000));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->status.code, 4);
  EXPECT_THAT(r->out, HasSubstr("out\n"));
  EXPECT_THAT(r->out, HasSubstr("err\n"));
  auto slow = run_command({"/bin/sleep", "30"}, std::chrono::milliseconds(300));
  ASSERT_FALSE(slow.ok());
  EXPECT_THAT(slow.error().message(), HasSubstr("did not finish within 300 ms"));
  auto missing = run_command({"no-such-tool-here"}, std::chrono::milliseconds(5000));
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status.code, 127);
}

}  // namespace
}  // namespace daqflow::control
