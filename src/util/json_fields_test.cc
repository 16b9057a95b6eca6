#include "util/json_fields.h"

#include <gtest/gtest.h>

namespace dt {
namespace {

using nlohmann::json;

TEST(JsonFieldsTest, AStringFieldIsRead) {
  const json j = {{"schema", "dualtrack.bundle/1"}};
  EXPECT_EQ(JsonOptString(j, "schema"), "dualtrack.bundle/1");
  EXPECT_EQ(JsonString(j, "schema"), "dualtrack.bundle/1");
}

TEST(JsonFieldsTest, AFieldOfAnotherTypeIsAbsentNotAnException) {
  for (const json& v : {json(1), json(nullptr), json(true), json::array({"a"}), json::object()}) {
    const json j = {{"schema", v}};
    EXPECT_EQ(JsonOptString(j, "schema"), std::nullopt) << v.dump();
    EXPECT_EQ(JsonString(j, "schema"), "") << v.dump();
  }
}

TEST(JsonFieldsTest, AMissingKeyOrANonObjectIsAbsent) {
  EXPECT_EQ(JsonOptString(json::object(), "schema"), std::nullopt);
  for (const json& doc : {json(nullptr), json("schema"), json::array({"schema"}), json(3)}) {
    EXPECT_EQ(JsonOptString(doc, "schema"), std::nullopt) << doc.dump();
    EXPECT_EQ(JsonString(doc, "schema"), "") << doc.dump();
  }
}

TEST(JsonFieldsTest, ABooleanOfAnotherTypeIsTheFallback) {
  const json j = {{"on", true}, {"off", false}, {"text", "yes"}, {"one", 1}};
  EXPECT_TRUE(JsonBool(j, "on", false));
  EXPECT_FALSE(JsonBool(j, "off", true));
  EXPECT_TRUE(JsonBool(j, "text", true));
  EXPECT_FALSE(JsonBool(j, "one", false));
  EXPECT_TRUE(JsonBool(j, "missing", true));
  EXPECT_FALSE(JsonBool(json::array({true}), "on", false));
}

TEST(JsonFieldsTest, ParseJsonReadsADocument) {
  auto j = ParseJson(R"({"a": [1, 2.5]})", "x.json");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["a"][1], 2.5);
}

TEST(JsonFieldsTest, ParseJsonNamesTheFileAndByteOfASyntaxError) {
  auto j = ParseJson("{\"a\": \x01}", "bad.json", 7);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().code, ErrorCode::kInput);
  EXPECT_EQ(j.error().file, "bad.json");
  EXPECT_EQ(j.error().line, 7);
  EXPECT_NE(j.error().message.find("syntax error at byte 7"), std::string::npos)
      << j.error().message;
  EXPECT_EQ(j.error().message.find('\x01'), std::string::npos);
}

// nlohmann reports a number beyond a double's range as out_of_range, not parse_error: a reader
// that caught only parse_error let it escape (the bundle fuzzer found it with "1e999").
TEST(JsonFieldsTest, ParseJsonTurnsAnOutOfRangeNumberIntoAnInputError) {
  for (const char* text : {"1e999", R"({"loss": -1e400})", "[0, 1E+99999]"}) {
    auto j = ParseJson(text, "big.json");
    ASSERT_FALSE(j.ok()) << text;
    EXPECT_EQ(j.error().code, ErrorCode::kInput) << text;
    EXPECT_NE(j.error().message.find("too large"), std::string::npos) << j.error().message;
  }
}

TEST(JsonFieldsTest, DeepNestingIsAnInputErrorBeforeParsing) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  auto parsed = ParseJson(deep, "deep.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().ToString().find("deep.json"), std::string::npos);
  EXPECT_NE(parsed.error().message.find("nested deeper than 512"), std::string::npos);
  // Brackets inside strings do not count; the bound itself is fine.
  EXPECT_TRUE(CheckJsonDepth("[\"" + std::string(1000, '[') + "\"]", "s.json").ok());
  EXPECT_TRUE(CheckJsonDepth("[\"\\\"[[\"]", "e.json", 0, 1).ok());
  const std::string bound = std::string(512, '[') + std::string(512, ']');
  EXPECT_TRUE(ParseJson(bound, "b.json").ok());
  EXPECT_FALSE(CheckJsonDepth("[[]]", "t.json", 0, 1).ok());
}

}  // namespace
}  // namespace dt
