#include <gtest/gtest.h>

#include <memory>

#include "daqflow/core/result.hpp"

namespace daqflow {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return Error("value " + std::to_string(v) + " is not positive");
  return v;
}

Result<void> configure(int v) {
  auto r = parse_positive(v);
  if (!r) return r.error().context("configuring ru1");
  return ok();
}

TEST(Result, CarriesValueOrError) {
  auto good = parse_positive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  auto bad = parse_positive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "value -1 is not positive");
}

TEST(Result, ContextIsPrependedAsTheErrorTravelsUp) {
  auto r = configure(0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "configuring ru1: value 0 is not positive");
  EXPECT_TRUE(configure(1).ok());
}

TEST(Result, HoldsMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(4);
  auto p = std::move(r).value();
  EXPECT_EQ(*p, 4);
}

}  // namespace
TEST(Result, ASystemCallsErrnoGivesTheCodeThatFits) {
  EXPECT_EQ(code_of_errno(ENOENT), ErrorCode::not_found);
  EXPECT_EQ(code_of_errno(EEXIST), ErrorCode::conflict);
  EXPECT_EQ(code_of_errno(EADDRINUSE), ErrorCode::unavailable);
  EXPECT_EQ(code_of_errno(ENOSPC), ErrorCode::unavailable);
  EXPECT_EQ(code_of_errno(ENOMEM), ErrorCode::unavailable);
  EXPECT_EQ(code_of_errno(ECONNREFUSED), ErrorCode::unavailable);
  EXPECT_EQ(code_of_errno(ETIMEDOUT), ErrorCode::timed_out);
  EXPECT_EQ(code_of_errno(EINVAL), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of_errno(EBADF), ErrorCode::internal);
  EXPECT_EQ(code_of_errno(0), ErrorCode::internal);
}

}  // namespace daqflow
