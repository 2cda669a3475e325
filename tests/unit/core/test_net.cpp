// core/net: an owning descriptor, resolution and listening sockets whose errors say why.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <unistd.h>

#include "daqflow/core/net.hpp"

namespace daqflow::core {
namespace {

using ::testing::HasSubstr;

bool open_fd(int fd) {
  return ::fcntl(fd, F_GETFD) != -1;
}

TEST(UniqueFd, ClosesOnDestructionResetAndMoveAssignment) {
  int raw = -1;
  {
    UniqueFd fd(::dup(STDERR_FILENO));
    raw = fd.get();
    ASSERT_TRUE(fd);
    EXPECT_TRUE(open_fd(raw));
  }
  EXPECT_FALSE(open_fd(raw));

  UniqueFd a(::dup(STDERR_FILENO));
  const int first = a.get();
  a.reset(::dup(STDERR_FILENO));
  EXPECT_FALSE(open_fd(first) && first != a.get());
  UniqueFd b(::dup(STDERR_FILENO));
  const int second = b.get();
  b = std::move(a);
  EXPECT_FALSE(open_fd(second) && second != b.get());
  EXPECT_FALSE(a);  // NOLINT: moved-from is empty by contract
}

TEST(Net, ResolvesAddressesAndNamesAnUnknownHost) {
  auto v4 = resolve("127.0.0.1", 9000);
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->storage.ss_family, AF_INET);
  EXPECT_EQ(v4->text, "127.0.0.1:9000");
  auto v6 = resolve("::1", 9000);
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->storage.ss_family, AF_INET6);
  auto bad = resolve("no-such-host.invalid", 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message(), HasSubstr("no-such-host.invalid"));
  EXPECT_EQ(bad.error().code(), ErrorCode::not_found);
}

TEST(Net, ATakenPortIsUnavailableAndTheErrorNamesIt) {
  auto any = resolve("127.0.0.1", 0);
  ASSERT_TRUE(any.ok());
  auto first = listen_tcp(*any, /*non_blocking=*/true);
  ASSERT_TRUE(first.ok()) << first.error().message();
  sockaddr_in bound{};
  socklen_t length = sizeof bound;
  ASSERT_EQ(::getsockname(first->get(), reinterpret_cast<sockaddr*>(&bound), &length), 0);
  const auto port = ntohs(bound.sin_port);
  auto taken = resolve("127.0.0.1", port);
  ASSERT_TRUE(taken.ok());
  bool tuned = false;
  auto second = listen_tcp(*taken, /*non_blocking=*/false, [&](int) { tuned = true; });
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(tuned) << "options are set before bind and listen";
  EXPECT_EQ(second.error().code(), ErrorCode::unavailable);
  EXPECT_THAT(second.error().message(),
              HasSubstr("cannot listen on 127.0.0.1:" + std::to_string(port)));
}

}  // namespace
}  // namespace daqflow::core
