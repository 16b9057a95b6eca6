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

}  // namespace
}  // namespace dt
