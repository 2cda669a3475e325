// Parameter checks as the control API uses them (PUT /params): kinds, bounds, choices, unknown
// and missing keys, defaults filled in, messages by parameter name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "daqflow/runtime/params.hpp"
#include "test_config_registry.hpp"

namespace daqflow::runtime {
namespace {

using config_testing::bounded;
using config_testing::one_of;
using config_testing::param;
using config_testing::with_fields;
using nlohmann::json;
using ::testing::HasSubstr;

ParamSpec spec(ParamKind kind) {
  return param("p", kind);
}

std::string error_of(const ParamSpec& s, const json& value) {
  auto r = check_param_value(s, value);
  return r.ok() ? std::string() : r.error().message();
}

const std::vector<ParamSpec>& sink_specs() {
  static const std::vector<ParamSpec> specs{
      param("peer", ParamKind::app_ref),
      bounded(param("size", ParamKind::integer, "4096"), 1, 65536),
      one_of(param("mode", ParamKind::string, "\"fast\""), {"fast", "safe"}),
      bounded(param("limit", ParamKind::number, "null"), 0, std::nullopt),
      with_fields(param("output", ParamKind::object, "{}"),
                  {param("kind", ParamKind::string, "\"null\""),
                   param("max_file_mb", ParamKind::integer, "256")}),
  };
  return specs;
}

TEST(Params, KindsHaveTheirConfigurationNames) {
  EXPECT_STREQ(to_string(ParamKind::integer), "integer");
  EXPECT_STREQ(to_string(ParamKind::number), "number");
  EXPECT_STREQ(to_string(ParamKind::boolean), "boolean");
  EXPECT_STREQ(to_string(ParamKind::string), "string");
  EXPECT_STREQ(to_string(ParamKind::app_ref), "app_ref");
  EXPECT_STREQ(to_string(ParamKind::app_ref_list), "app_ref_list");
  EXPECT_STREQ(to_string(ParamKind::integer_list), "integer_list");
  EXPECT_STREQ(to_string(ParamKind::object), "object");
}

TEST(Params, IntegersMustBeIntegersWithinBounds) {
  ParamSpec s = spec(ParamKind::integer);
  s.min = 1;
  s.max = 10;
  EXPECT_EQ(error_of(s, 5), "");
  EXPECT_EQ(error_of(s, 0), "0 is out of range 1..10");
  EXPECT_EQ(error_of(s, 11), "11 is out of range 1..10");
  EXPECT_EQ(error_of(s, 2.5), "expected an integer, got number 2.5");
  EXPECT_EQ(error_of(s, "5"), "expected an integer, got string \"5\"");
  s.max.reset();
  EXPECT_EQ(error_of(s, 1u << 31), "");
  EXPECT_EQ(error_of(s, -3), "-3 is below the minimum 1");
}

TEST(Params, NumbersAcceptIntegersAndFractions) {
  ParamSpec s = spec(ParamKind::number);
  s.max = 1.5;
  EXPECT_EQ(error_of(s, 1), "");
  EXPECT_EQ(error_of(s, 1.25), "");
  EXPECT_EQ(error_of(s, 2), "2 is above the maximum 1.5");
  EXPECT_EQ(error_of(s, true), "expected a number, got boolean true");
}

TEST(Params, BooleansStringsAndChoices) {
  EXPECT_EQ(error_of(spec(ParamKind::boolean), false), "");
  EXPECT_EQ(error_of(spec(ParamKind::boolean), 1), "expected true or false, got integer 1");
  ParamSpec s = spec(ParamKind::string);
  EXPECT_EQ(error_of(s, "anything"), "");
  EXPECT_EQ(error_of(s, json::array()), "expected a string, got a list");
  s.choices = {"file", "null"};
  EXPECT_EQ(error_of(s, "file"), "");
  EXPECT_EQ(error_of(s, "disk"), "\"disk\" is not one of: file, null");
}

TEST(Params, ApplicationReferencesAreNonEmptyIds) {
  ParamSpec s = spec(ParamKind::app_ref);
  EXPECT_EQ(error_of(s, "ru1"), "");
  EXPECT_EQ(error_of(s, ""), "expected an application id, got an empty string");
  EXPECT_EQ(error_of(s, 3), "expected an application id, got integer 3");
  s.default_json = "\"\"";  // "no peer" allowed
  EXPECT_EQ(error_of(s, ""), "");

  const ParamSpec list = spec(ParamKind::app_ref_list);
  EXPECT_EQ(error_of(list, json::array({"bu1", "bu2"})), "");
  EXPECT_EQ(error_of(list, "bu1"), "expected a list, got string \"bu1\"");
  EXPECT_EQ(error_of(list, json::array({"bu1", 2})),
            "at '[1]': expected an application id, got integer 2");
}

TEST(Params, IntegerListsCheckEachElement) {
  ParamSpec s = spec(ParamKind::integer_list);
  s.min = 0;
  s.max = 4095;
  EXPECT_EQ(error_of(s, json::array({1, 2, 3})), "");
  EXPECT_EQ(error_of(s, json::array()), "");
  EXPECT_EQ(error_of(s, json::array({1, 5000, "x"})),
            "at '[1]': 5000 is out of range 0..4095\n"
            "at '[2]': expected an integer, got string \"x\"");
}

TEST(Params, ObjectsCheckTheirFields) {
  const ParamSpec& output = sink_specs()[4];
  EXPECT_EQ(error_of(output, json::object()), "");
  EXPECT_EQ(error_of(output, json{{"kind", "file"}, {"max_file_mb", "big"}}),
            "at 'max_file_mb': expected an integer, got string \"big\"");
  EXPECT_EQ(error_of(output, json{{"kinds", "file"}}),
            "unknown key 'kinds' (did you mean 'kind'? expected one of: kind, max_file_mb)");
  EXPECT_EQ(error_of(output, 5), "expected a mapping, got integer 5");

  ParamSpec strict = output;
  strict.fields[0].default_json.clear();
  EXPECT_EQ(error_of(strict, json::object()), "missing required key 'kind'");
}

TEST(Params, NullIsAcceptedWhereItIsTheDefault) {
  const ParamSpec& limit = sink_specs()[3];
  EXPECT_EQ(error_of(limit, nullptr), "");
  EXPECT_EQ(error_of(limit, 2.5), "");
  EXPECT_EQ(error_of(spec(ParamKind::integer), nullptr), "expected an integer, got null");
}

TEST(Params, ValidateFillsInDefaults) {
  auto r = validate_params(sink_specs(), json{{"peer", "bu1"}, {"output", {{"kind", "file"}}}});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, json::parse(R"({"peer": "bu1", "size": 4096, "mode": "fast", "limit": null,
                                 "output": {"kind": "file", "max_file_mb": 256}})"));
}

TEST(Params, ValidateReportsEveryProblemByName) {
  auto r = validate_params(sink_specs(),
                           json{{"size", 0}, {"mod", "safe"}, {"output", {{"max_file_mb", "x"}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(),
            "unknown parameter 'mod' (did you mean 'mode'? expected one of: peer, size, mode, "
            "limit, output)\n"
            "parameter 'output.max_file_mb': expected an integer, got string \"x\"\n"
            "parameter 'size': 0 is out of range 1..65536\n"
            "missing required parameter 'peer'");
}

TEST(Params, ValidateWantsAnObject) {
  auto r = validate_params(sink_specs(), json::array());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "parameters must be a JSON object, got a list");
}

TEST(Params, ABrokenDefaultIsReportedAsTheTypesFault) {
  const std::vector<ParamSpec> specs{
      param("n", ParamKind::integer, "eight"),
      bounded(param("m", ParamKind::integer, "0"), 1, std::nullopt),
  };
  auto r = validate_params(specs, json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr("the default of parameter 'n' is not JSON: eight"));
  EXPECT_THAT(r.error().message(),
              HasSubstr("the default 0 of parameter 'm' is invalid: 0 is below the minimum 1"));
}

}  // namespace
}  // namespace daqflow::runtime
