#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "daqflow/control/process.hpp"

namespace daqflow::control {
namespace {

namespace fs = std::filesystem;

class ProcessTest : public ::testing::Test {
 protected:
  ProcessTest()
      : dir(fs::temp_directory_path() / ("daqflow-process-test-" + std::to_string(::getpid()))) {}
  ~ProcessTest() override { fs::remove_all(dir); }
  std::string log(const std::string& name) const { return (dir / "logs" / name).string(); }
  fs::path dir;
};

TEST_F(ProcessTest, ExitCodeAndOutputGoToTheLog) {
  auto child =
      ChildProcess::spawn({"/bin/sh", "-c", "echo hello; echo oops >&2; exit 3"}, log("a.log"));
  ASSERT_TRUE(child.ok()) << child.error().message();
  const auto status = child->wait_for(std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->code, 3);
  EXPECT_EQ(status->signal, 0);
  EXPECT_EQ(status->str(), "exited with code 3");
  EXPECT_EQ(tail_of_file(log("a.log"), 10), "hello\noops");
}

TEST_F(ProcessTest, ASignalledChildIsReportedWithTheSignal) {
  auto child = ChildProcess::spawn({"/bin/sleep", "30"}, log("b.log"));
  ASSERT_TRUE(child.ok());
  EXPECT_FALSE(child->poll().has_value());
  ASSERT_EQ(::kill(child->pid(), SIGKILL), 0);
  const auto status = child->wait_for(std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->signal, SIGKILL);
  EXPECT_EQ(status->shell_code(), 137);
  EXPECT_EQ(status->str().rfind("killed by signal 9", 0), 0u) << status->str();
}

// Killed but not yet reaped, it reads as ending: the window in which its sockets are closed but
// poll() cannot see its end yet.
TEST_F(ProcessTest, AKilledChildReadsAsEndingUntilReaped) {
  auto child = ChildProcess::spawn({"/bin/sleep", "30"}, log("f.log"));
  ASSERT_TRUE(child.ok());
  EXPECT_FALSE(child->ending());
  ASSERT_EQ(::kill(child->pid(), SIGKILL), 0);
  // Not polled: the child stays a zombie. The signal is carried out asynchronously.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!child->ending() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(child->ending());
  ASSERT_TRUE(child->wait_for(std::chrono::seconds(10)).has_value());
  EXPECT_FALSE(child->ending());
}

TEST_F(ProcessTest, TheChildRunsInItsOwnProcessGroup) {
  auto child = ChildProcess::spawn({"/bin/sleep", "30"}, log("c.log"));
  ASSERT_TRUE(child.ok());
  // setpgid() is also called by the parent, so the group exists once spawn() returned.
  EXPECT_EQ(::getpgid(child->pid()), child->pid());
  EXPECT_EQ(child->kill_and_reap().signal, SIGKILL);
}

TEST_F(ProcessTest, DestroyingARunningChildKillsAndReapsIt) {
  pid_t pid = 0;
  {
    auto child = ChildProcess::spawn({"/bin/sleep", "30"}, log("d.log"));
    ASSERT_TRUE(child.ok());
    pid = child->pid();
  }
  // Reaped: no such child any more.
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
}

TEST_F(ProcessTest, AProgramThatCannotStartExitsWith127) {
  auto child = ChildProcess::spawn({"/nonexistent/daqflow"}, log("e.log"));
  ASSERT_TRUE(child.ok());
  const auto status = child->wait_for(std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->code, 127);
  EXPECT_NE(tail_of_file(log("e.log"), 5).find("exec failed"), std::string::npos);
}

TEST_F(ProcessTest, AnUnwritableLogIsAnErrorNamingIt) {
  auto child = ChildProcess::spawn({"/bin/true"}, "/proc/daqflow/x.log");
  ASSERT_FALSE(child.ok());
  EXPECT_NE(child.error().message().find("/proc/daqflow"), std::string::npos);
}

TEST_F(ProcessTest, TailKeepsTheLastLines) {
  fs::create_directories(dir);
  const auto path = (dir / "t.txt").string();
  std::ofstream(path) << "1\n2\n3\n4\n5\n";
  EXPECT_EQ(tail_of_file(path, 2), "4\n5");
  EXPECT_EQ(tail_of_file(path, 9), "1\n2\n3\n4\n5");
  EXPECT_EQ(tail_of_file(path, 0), "");
  EXPECT_EQ(tail_of_file((dir / "none").string(), 3), "");
}

TEST(ExitStatus, DecodesWaitStatusWords) {
  EXPECT_EQ(decode_wait_status(3 << 8).code, 3);  // W_EXITCODE(3, 0)
  EXPECT_EQ(decode_wait_status(SIGTERM).signal, SIGTERM);
  EXPECT_TRUE(decode_wait_status(0).clean());
}

TEST(SelfExecutable, IsAnAbsolutePath) {
  const auto self = self_executable();
  ASSERT_TRUE(self.ok());
  EXPECT_TRUE(fs::path(*self).is_absolute());
  EXPECT_TRUE(fs::exists(*self));
}

}  // namespace
}  // namespace daqflow::control
