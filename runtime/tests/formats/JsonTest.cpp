//===- JsonTest.cpp - the strict JSON parser's object keys ------------------===//
//
// Duplicate object keys: found wherever they are (the last of 200,000 keys,
// spelled with an escape, nested), reported at the duplicate's byte, and
// not confused across sibling or nested objects. The parse of 200,000 keys
// is here for correctness only; bench/json_keys.py measures its time.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Json.h"

#include "StatusTesting.h"

#include <gtest/gtest.h>

#include <string>

using namespace trc::rt;

namespace {

// {"k0":0,"k1":1,...} with `n` distinct keys, then `extra` (",\"k7\":0").
std::string manyKeys(size_t n, const std::string &extra = "") {
  std::string text = "{";
  for (size_t i = 0; i < n; ++i) {
    if (i)
      text += ',';
    text += "\"k" + std::to_string(i) + "\":" + std::to_string(i);
  }
  return text + extra + "}";
}

std::string parseError(const std::string &text) {
  Status s = parseJson(text).status();
  return s ? std::string("(parsed)") : s.message();
}

} // namespace

TEST(Json, TwoHundredThousandDistinctKeysParseInOrder) {
  const size_t n = 200000;
  TRC_ASSERT_OK_AND_ASSIGN(JsonValue v, parseJson(manyKeys(n)));
  ASSERT_EQ(v.members().size(), n);
  for (size_t i = 0; i < n; i += 9973) {
    EXPECT_EQ(v.members()[i].first, "k" + std::to_string(i));
    int64_t value = -1;
    ASSERT_TRUE(v.members()[i].second.asInt64(value));
    EXPECT_EQ(value, int64_t(i));
  }
}

TEST(Json, ADuplicateAfterTwoHundredThousandKeysIsFoundAtItsByte) {
  std::string prefix = manyKeys(200000);
  prefix.pop_back(); // '}'
  std::string text = manyKeys(200000, ",\"k123456\":0");
  EXPECT_EQ(parseError(text), "duplicate key \"k123456\" at byte " +
                                  std::to_string(prefix.size() + 1));
  EXPECT_EQ(parseError(manyKeys(200000, ",\"k0\":0")),
            "duplicate key \"k0\" at byte " + std::to_string(prefix.size() + 1));
}

TEST(Json, KeysAreComparedAfterDecodingEscapes) {
  EXPECT_EQ(parseError("{\"ab\":1,\"\\u0061b\":2}"),
            "duplicate key \"ab\" at byte 8");
  EXPECT_EQ(parseError("{\"a/\":1,\"a\\/\":2}"),
            "duplicate key \"a/\" at byte 8");
}

TEST(Json, LongAndShortKeysAreBothChecked) {
  // Short keys live inside their std::string, long ones on the heap; both
  // must still be found after the member list has grown many times.
  std::string longKey(300, 'x');
  std::string text = "{\"" + longKey + "\":0";
  for (int i = 0; i < 1000; ++i)
    text += ",\"" + std::to_string(i) + "\":0";
  EXPECT_EQ(parseError(text + ",\"" + longKey + "\":1}"),
            "duplicate key \"" + longKey + "\" at byte " +
                std::to_string(text.size() + 1));
  EXPECT_EQ(parseError(text + ",\"7\":1}"),
            "duplicate key \"7\" at byte " + std::to_string(text.size() + 1));
}

TEST(Json, SameKeyInDifferentObjectsIsNotADuplicate) {
  std::string text = "{\"a\":{\"a\":1,\"b\":{\"a\":2}},\"b\":[{\"a\":3},{\"a\":4}]}";
  TRC_ASSERT_OK_AND_ASSIGN(JsonValue v, parseJson(text));
  ASSERT_EQ(v.members().size(), 2u);
  ASSERT_NE(v.find("a"), nullptr);
  ASSERT_NE(v.find("a")->find("b"), nullptr);
  EXPECT_EQ(v.find("a")->find("b")->find("a")->text(), "2");
  // A duplicate inside a nested object is still one.
  EXPECT_EQ(parseError("{\"a\":{\"x\":1,\"x\":2}}"),
            "duplicate key \"x\" at byte 12");
}

TEST(Json, EmptyKeyIsAKeyLikeAnyOther) {
  TRC_ASSERT_OK_AND_ASSIGN(JsonValue v, parseJson("{\"\":1,\"a\":2}"));
  EXPECT_EQ(parseError("{\"\":1,\"\":2}"), "duplicate key \"\" at byte 6");
}
