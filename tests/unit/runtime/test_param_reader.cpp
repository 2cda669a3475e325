// ParamReader: typed reads of validated parameters, errors that name the owner and the key, the
// first error kept across reads; ParamSpec builders write defaults and bounds once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "daqflow/runtime/params.hpp"

namespace daqflow::runtime {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(ParamReader, ReadsEveryKindItDeclares) {
  const json params = {{"size", 4096},        {"rate", 2.5},
                       {"on", true},          {"mode", "fast"},
                       {"peers", {"a", "b"}}, {"ids", {1, 2, 3}},
                       {"first", nullptr},    {"output", {{"kind", "file"}, {"max_mb", 8}}}};
  ParamReader p(params, "application 'bu1'");
  EXPECT_EQ(p.get<std::uint32_t>("size"), 4096u);
  EXPECT_EQ(p.get<std::int64_t>("size"), 4096);
  EXPECT_EQ(p.get<double>("rate"), 2.5);
  EXPECT_EQ(p.get<double>("size"), 4096.0) << "an integer is a number";
  EXPECT_TRUE(p.get<bool>("on"));
  EXPECT_EQ(p.get<std::string>("mode"), "fast");
  EXPECT_EQ(p.get<std::vector<std::string>>("peers"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.get<std::vector<std::int64_t>>("ids"), (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(p.get<std::optional<std::int64_t>>("first"), std::nullopt);
  ParamReader output = p.object("output");
  EXPECT_EQ(output.get<std::string>("kind"), "file");
  EXPECT_EQ(output.get<std::uint64_t>("max_mb"), 8u);
  EXPECT_TRUE(p.status().ok());
}

TEST(ParamReader, AMissingKeyIsAnErrorNamingTheOwnerAndTheKey) {
  const json params = {{"size", 1}};
  ParamReader p(params, "application 'src0'");
  EXPECT_EQ(p.get<std::uint32_t>("count"), 0u);
  ASSERT_FALSE(p.status().ok());
  EXPECT_EQ(p.status().error().message(), "application 'src0': parameter 'count': missing");
}

TEST(ParamReader, AWrongTypeOrRangeIsAnErrorAndTheFirstOneIsKept) {
  const json params = {{"size", "big"}, {"depth", -1}, {"mode", 3}};
  ParamReader p(params, "application 'src0'");
  (void)p.get<std::uint32_t>("size");
  (void)p.get<std::uint32_t>("depth");
  (void)p.get<std::string>("mode");
  ASSERT_FALSE(p.status().ok());
  const std::string message = p.status().error().message();
  EXPECT_THAT(message, HasSubstr("parameter 'size'"));
  EXPECT_THAT(message, HasSubstr("expected an integer in 0..4294967295, got string \"big\""));
  EXPECT_EQ(p.status().error().code(), ErrorCode::invalid_argument);

  const json negative = {{"depth", -1}};
  ParamReader q(negative, "x");
  (void)q.get<std::uint64_t>("depth");
  EXPECT_THAT(q.status().error().message(), HasSubstr("'depth': expected an integer in 0.."));
}

TEST(ParamReader, NestedKeysArePathsAndShareTheFirstError) {
  const json params = {{"output", {{"kind", 5}}}};
  ParamReader p(params, "application 'bu1'");
  ParamReader output = p.object("output");
  (void)output.get<std::string>("kind");
  ASSERT_FALSE(p.status().ok()) << "the parent sees the error of its object";
  EXPECT_EQ(p.status().error().message(),
            "application 'bu1': parameter 'output.kind': expected a string, got integer 5");
}

TEST(ParamReader, ResultsAreReadWithTheirOwnNoun) {
  const json results = {{"messages", 3}};
  ParamReader r(results, "sink sink0", "result");
  (void)r.get<double>("throughput_mb_s");
  EXPECT_EQ(r.status().error().message(), "sink sink0: result 'throughput_mb_s': missing");
}

TEST(ParamReader, AnErrorAcrossParametersNamesTheKey) {
  const json none = json::object();
  ParamReader p(none, "application 'ping'");
  EXPECT_EQ(p.error("max_size", "is below min_size").message(),
            "application 'ping': parameter 'max_size': is below min_size");
}

TEST(ParamSpecBuilders, WriteTheKindDefaultBoundsAndChoices) {
  const ParamSpec size = ParamSpec::integer("size", "bytes").default_value(4096).range(1, 65536);
  EXPECT_EQ(size.kind, ParamKind::integer);
  EXPECT_EQ(size.default_json, "4096");
  EXPECT_EQ(size.min, 1.0);
  EXPECT_EQ(size.max, 65536.0);
  const ParamSpec mode =
      ParamSpec::string("mode", "how").default_value("fast").one_of({"fast", "safe"});
  EXPECT_EQ(mode.default_json, "\"fast\"");
  EXPECT_EQ(mode.choices, (std::vector<std::string>{"fast", "safe"}));
  EXPECT_TRUE(ParamSpec::app_ref("peer", "").default_json.empty()) << "required";
  EXPECT_EQ(ParamSpec::boolean("on", "").default_value(false).default_json, "false");
  EXPECT_EQ(ParamSpec::number("rate", "").default_value(0.5).at_least(0).min, 0.0);
  const ParamSpec output = ParamSpec::object("output", "", {ParamSpec::integer("n", "")});
  EXPECT_EQ(output.default_json, "{}");
  ASSERT_EQ(output.fields.size(), 1u);

  // The defaults are what validation fills in, and the bounds what it checks.
  auto filled = validate_params({size, mode}, json::object());
  ASSERT_TRUE(filled.ok()) << filled.error().message();
  EXPECT_EQ(*filled, (json{{"size", 4096}, {"mode", "fast"}}));
  EXPECT_FALSE(validate_params({size}, json{{"size", 0}}).ok());
}

}  // namespace
}  // namespace daqflow::runtime
