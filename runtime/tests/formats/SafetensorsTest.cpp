//===- SafetensorsTest.cpp - the safetensors format -------------------------===//
//
// Round trips of every dtype, a hand-written fixture (the exact bytes the
// Python package writes for three tensors), byte-for-byte agreement with
// the Python `safetensors` package both ways (skipped when .venv has no
// `safetensors`), and hostile headers: each rejected with its message, and
// thousands of random mutations of a valid file rejected or accepted
// without crashing.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Safetensors.h"

#include "StatusTesting.h"

#include "TestArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <unistd.h>

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace trc::rt;
using trc::rt::test::readFile;
using trc::rt::test::TempDir;
using trc::rt::test::writeFile;

namespace {

// 8-byte little-endian length + header + data.
std::string image(const std::string &header, const std::string &data = "") {
  std::string out;
  uint64_t n = header.size();
  out.append(reinterpret_cast<const char *>(&n), 8);
  return out + header + data;
}

std::string errorOf(const std::string &file) {
  Status s = decodeSafetensors(file, "x.safetensors").status();
  return s ? std::string() : s.message();
}

// A one-tensor header with the given entry body.
std::string one(const std::string &entry) {
  return "{\"a\":" + entry + "}";
}

// IEEE half of a float that is exactly representable as a normal half.
uint16_t toHalf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if ((b & 0x7fffffff) == 0)
    return uint16_t(b >> 16);
  uint32_t sign = b >> 31, exp = (b >> 23) & 0xff, mant = b & 0x7fffff;
  return uint16_t((sign << 15) | ((exp - 127 + 15) << 10) | (mant >> 13));
}

struct Owned {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

template <typename T> std::string bytesOf(const std::vector<T> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()),
                     v.size() * sizeof(T));
}

// The tensors of safetensors_interop.py (same formulas).
std::vector<Owned> referenceTensors(bool withBf16) {
  struct Spec {
    const char *name;
    DType dtype;
    std::vector<int64_t> shape;
  };
  std::vector<Spec> specs = {
      {"f64", DType::F64, {3}},    {"f32", DType::F32, {2, 3}},
      {"f16", DType::F16, {2, 2}}, {"i64", DType::I64, {5}},
      {"i32", DType::I32, {2, 2}}, {"i16", DType::I16, {3}},
      {"i8", DType::I8, {4}},      {"u64", DType::U64, {2}},
      {"u32", DType::U32, {3}},    {"u16", DType::U16, {3}},
      {"u8", DType::U8, {1, 5}},   {"bool", DType::I1, {6}},
      {"empty", DType::F32, {0, 4}}, {"scalar", DType::F32, {}},
  };
  if (withBf16)
    specs.push_back({"bf16", DType::BF16, {3}});
  std::vector<Owned> out;
  for (const Spec &s : specs) {
    int64_t n = 1;
    for (int64_t d : s.shape)
      n *= d;
    Owned t{s.name, s.dtype, s.shape, ""};
    for (int64_t i = 0; i < n; ++i) {
      double f = double(i) * 0.25 - 1;
      int64_t v = i * 37 + 5;
      int64_t sv = v - 60;
      switch (s.dtype) {
      case DType::F64: t.bytes += bytesOf(std::vector<double>{f}); break;
      case DType::F32: t.bytes += bytesOf(std::vector<float>{float(f)}); break;
      case DType::F16:
        t.bytes += bytesOf(std::vector<uint16_t>{toHalf(float(f))});
        break;
      case DType::BF16: {
        float ff = float(f);
        uint32_t b;
        std::memcpy(&b, &ff, 4);
        t.bytes += bytesOf(std::vector<uint16_t>{uint16_t(b >> 16)});
        break;
      }
      case DType::I64: t.bytes += bytesOf(std::vector<int64_t>{sv}); break;
      case DType::I32: t.bytes += bytesOf(std::vector<int32_t>{int32_t(sv)}); break;
      case DType::I16: t.bytes += bytesOf(std::vector<int16_t>{int16_t(sv)}); break;
      case DType::I8: t.bytes += bytesOf(std::vector<int8_t>{int8_t(sv)}); break;
      case DType::U64: t.bytes += bytesOf(std::vector<uint64_t>{uint64_t(v)}); break;
      case DType::U32: t.bytes += bytesOf(std::vector<uint32_t>{uint32_t(v)}); break;
      case DType::U16: t.bytes += bytesOf(std::vector<uint16_t>{uint16_t(v)}); break;
      case DType::U8: t.bytes += bytesOf(std::vector<uint8_t>{uint8_t(v)}); break;
      case DType::I1: t.bytes += char(i % 3 != 1); break;
      default: break;
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<SafetensorsView> viewsOf(const std::vector<Owned> &owned) {
  std::vector<SafetensorsView> views;
  for (const Owned &o : owned)
    views.push_back({o.name, o.dtype, o.shape, o.bytes.data()});
  return views;
}

const SafetensorsMetadata kInteropMetadata = {
    {"note", "h\xc3\xa9llo \"quoted\" \\ tab\t \b\f\x01 end"}};

// The Python of the project's virtual environment, if it has safetensors.
bool havePythonSafetensors() {
  std::string cmd = std::string("'") + TRC_TEST_PYTHON +
                    "' -c 'import safetensors, numpy' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

int runInterop(const std::string &mode, const std::string &path) {
  std::string cmd = std::string("'") + TRC_TEST_PYTHON + "' '" +
                    TRC_TEST_SAFETENSORS_SCRIPT + "' " + mode + " '" + path +
                    "'";
  return std::system(cmd.c_str());
}

} // namespace

TEST(Safetensors, RoundTripsEveryDType) {
  DType dtypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16,
                    DType::I1,  DType::I8,  DType::I16, DType::I32,
                    DType::I64, DType::U8,  DType::U16, DType::U32,
                    DType::U64};
  std::vector<std::vector<int64_t>> shapes = {{}, {0}, {5}, {2, 3},
                                              {2, 0, 4}, {1, 2, 3, 4}};
  std::vector<Owned> owned;
  std::mt19937 rng(7);
  for (DType dt : dtypes) {
    for (const auto &shape : shapes) {
      int64_t n = 1;
      for (int64_t d : shape)
        n *= d;
      Owned o{std::string(dtypeName(dt)) + "/" + formatShape(shape), dt,
              shape, ""};
      for (int64_t i = 0; i < n * int64_t(dtypeSize(dt)); ++i)
        o.bytes += char(dt == DType::I1 ? rng() & 1 : rng() & 0xff);
      owned.push_back(std::move(o));
    }
  }
  SafetensorsMetadata meta = {{"a", "1"}, {"b", "two"}, {"", "empty key"}};
  TRC_ASSERT_OK_AND_ASSIGN(std::string file, encodeSafetensors(viewsOf(owned), meta));
  TRC_ASSERT_OK_AND_ASSIGN(SafetensorsContents decoded, decodeSafetensors(file, "x"));
  const std::vector<NamedTensor> &got = decoded.tensors;
  EXPECT_EQ(decoded.metadata, meta);
  ASSERT_EQ(got.size(), owned.size());
  for (const Owned &o : owned) {
    auto it = std::find_if(got.begin(), got.end(),
                           [&](const NamedTensor &t) { return t.name == o.name; });
    ASSERT_NE(it, got.end()) << o.name;
    EXPECT_EQ(it->tensor.dtype, o.dtype) << o.name;
    EXPECT_EQ(it->tensor.shape, o.shape) << o.name;
    EXPECT_EQ(std::string(static_cast<const char *>(it->tensor.data()),
                          it->tensor.byteSize()),
              o.bytes)
        << o.name;
  }
}

TEST(Safetensors, LayoutAlignsEveryTensor) {
  std::vector<Owned> owned = referenceTensors(true);
  TRC_ASSERT_OK_AND_ASSIGN(std::string file, encodeSafetensors(viewsOf(owned), {}));
  TRC_ASSERT_OK_AND_ASSIGN(SafetensorsIndex index, parseSafetensorsIndex(file, "x"));
  EXPECT_EQ(index.dataStart % 8, 0u);
  for (const SafetensorsEntry &e : index.tensors)
    EXPECT_EQ(e.begin % dtypeSize(e.dtype), 0u) << e.name;
  // U64 I64 F64 F32 U32 I32 BF16 F16 U16 I16 I8 U8 BOOL, then by name.
  std::vector<std::string> names;
  for (const SafetensorsEntry &e : index.tensors)
    names.push_back(e.name);
  std::vector<std::string> want = {"u64", "i64", "f64", "empty", "f32",
                                   "scalar", "u32", "i32", "bf16", "f16",
                                   "u16", "i16", "i8", "u8", "bool"};
  EXPECT_EQ(names, want);
}

// The exact bytes that safetensors.numpy.save({"w": arange(2, f32),
// "i": [7] i64, "b": [True, False]}, metadata={"k": "v"}) produces.
TEST(Safetensors, MatchesAHandWrittenFixture) {
  std::string header =
      "{\"__metadata__\":{\"k\":\"v\"},"
      "\"i\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
      "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
      "\"b\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[16,18]}}   ";
  ASSERT_EQ(header.size(), 0xc0u);
  std::string data("\x07\0\0\0\0\0\0\0" "\0\0\0\0\0\0\x80\x3f" "\x01\0", 18);
  std::string fixture = image(header, data);

  std::vector<float> w = {0, 1};
  int64_t i = 7;
  uint8_t b[2] = {1, 0};
  std::vector<SafetensorsView> views = {{"w", DType::F32, {2}, w.data()},
                                        {"i", DType::I64, {1}, &i},
                                        {"b", DType::I1, {2}, b}};
  TRC_ASSERT_OK_AND_ASSIGN(std::string mine, encodeSafetensors(views, {{"k", "v"}}));
  EXPECT_EQ(mine, fixture);

  TRC_ASSERT_OK_AND_ASSIGN(SafetensorsContents decoded, decodeSafetensors(fixture, "fixture"));
  const std::vector<NamedTensor> &got = decoded.tensors;
  const SafetensorsMetadata &meta = decoded.metadata;
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(meta.at("k"), "v");
  EXPECT_EQ(got[0].name, "i");
  EXPECT_EQ(got[0].tensor.as<int64_t>()[0], 7);
  EXPECT_EQ(got[1].name, "w");
  EXPECT_EQ(got[1].tensor.as<float>()[1], 1.0f);
  EXPECT_EQ(got[2].name, "b");
  EXPECT_EQ(got[2].tensor.dtype, DType::I1);
  EXPECT_EQ(got[2].tensor.as<uint8_t>()[0], 1);
}

TEST(Safetensors, WritesFilesAtomically) {
  TempDir dir;
  std::vector<Owned> owned = referenceTensors(true);
  std::string path = dir.file("t.safetensors");
  Status s = writeSafetensorsFile(path, viewsOf(owned), {{"x", "y"}});
  ASSERT_TRUE(s) << s.message();
  TRC_ASSERT_OK_AND_ASSIGN(SafetensorsContents read, readSafetensorsFile(path));
  EXPECT_EQ(read.tensors.size(), owned.size());
  EXPECT_EQ(read.metadata.at("x"), "y");
  int files = 0;
  for (const auto &entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1); // no temp file left
  s = readSafetensorsFile(dir.file("missing.safetensors")).status();
  EXPECT_THAT(s.message(), HasSubstr("missing.safetensors: cannot open"));
}

TEST(Safetensors, AgreesWithThePythonPackage) {
  if (!havePythonSafetensors())
    GTEST_SKIP() << TRC_TEST_PYTHON << " cannot import safetensors "
                 << "(bash scripts/setup.sh installs it)";
  TempDir dir;
  // Python writes; trc encodes the same tensors to the same bytes and
  // decodes Python's file to the same values.
  std::string pyPath = dir.file("py.safetensors");
  ASSERT_EQ(runInterop("write", pyPath), 0);
  std::string pyBytes = readFile(pyPath);
  std::vector<Owned> owned = referenceTensors(false);
  TRC_ASSERT_OK_AND_ASSIGN(std::string mine, encodeSafetensors(viewsOf(owned), kInteropMetadata));
  EXPECT_EQ(mine, pyBytes);
  TRC_ASSERT_OK_AND_ASSIGN(SafetensorsContents decoded, decodeSafetensors(pyBytes, pyPath));
  const std::vector<NamedTensor> &got = decoded.tensors;
  EXPECT_EQ(decoded.metadata, kInteropMetadata);
  for (const Owned &o : owned) {
    auto it = std::find_if(got.begin(), got.end(),
                           [&](const NamedTensor &t) { return t.name == o.name; });
    ASSERT_NE(it, got.end()) << o.name;
    EXPECT_EQ(std::string(static_cast<const char *>(it->tensor.data()),
                          it->tensor.byteSize()),
              o.bytes)
        << o.name;
  }
  // trc writes (bf16 too); Python reads and checks every tensor.
  std::string trcPath = dir.file("written_by_trc.safetensors");
  std::vector<Owned> withBf16 = referenceTensors(true);
  ASSERT_TRUE(
      writeSafetensorsFile(trcPath, viewsOf(withBf16), kInteropMetadata));
  EXPECT_EQ(runInterop("check", trcPath), 0);
}

TEST(Safetensors, RejectsMalformedFramesAndHeaders) {
  EXPECT_THAT(
      errorOf(std::string("\x05\0\0", 3)),
      AllOf(StartsWith("x.safetensors: "),
            HasSubstr(
                "the file is 3 bytes, shorter than the 8-byte header length")));
  std::string huge(8, '\xff');
  EXPECT_THAT(
      errorOf(huge),
      AllOf(StartsWith("x.safetensors: "),
            HasSubstr("header length 18446744073709551615 is more than the "
                      "limit of 100000000 bytes")));
  std::string past("\x40\0\0\0\0\0\0\0{}", 10);
  EXPECT_THAT(
      errorOf(past),
      AllOf(StartsWith("x.safetensors: "),
            HasSubstr("header length 64 runs past the end of the file (10 "
                      "bytes)")));
  EXPECT_THAT(errorOf(image(" {}")),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("the header does not start with '{'")));
  EXPECT_THAT(errorOf(image("")),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("the header does not start with '{'")));
  EXPECT_THAT(errorOf(image("{\"a\" 1}")),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("header: expected ':' at byte 5")));
  EXPECT_THAT(errorOf(image("{\"a\":{}")),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("header: expected ',' or '}' at byte 7")));
  EXPECT_THAT(
      errorOf(image("{} x")),
      AllOf(StartsWith("x.safetensors: "),
            HasSubstr("unexpected characters after the JSON value at byte 3")));
  EXPECT_THAT(errorOf(image("{\"a\":nul}")),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("expected a JSON value at byte 5")));
  EXPECT_THAT(errorOf(image("{\"a\":01}")),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("expected ',' or '}' at byte 6")));
  EXPECT_THAT(
      errorOf(image("{\"a\":[1,]}")),
      AllOf(StartsWith("x.safetensors: "), HasSubstr("expected a JSON value")));
  EXPECT_THAT(errorOf(image("{\"a\":1.}")),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("expected digits after '.'")));
  EXPECT_THAT(errorOf(image("{\"a\":\"x\ty\"}")),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("control character in a string")));
  EXPECT_THAT(errorOf(image("{\"a\":\"\\q\"}")),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("invalid escape in a string")));
  EXPECT_THAT(
      errorOf(image("{\"a\":\"\\ud800\"}")),
      AllOf(StartsWith("x.safetensors: "), HasSubstr("unpaired surrogate")));
  EXPECT_THAT(errorOf(image("{\"a\":\"\xc0\x80\"}")),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("invalid UTF-8 in a string")));
  EXPECT_THAT(errorOf(image("{\"a\":\"\xed\xa0\x80\"}")),
              AllOf(StartsWith("x.safetensors: "), HasSubstr("invalid UTF-8")));
  EXPECT_THAT(
      errorOf(image("{\"a\":\"abc")),
      AllOf(StartsWith("x.safetensors: "), HasSubstr("unterminated string")));
  EXPECT_THAT(
      errorOf(image("{\"a\":1,\"a\":2}")),
      AllOf(StartsWith("x.safetensors: "), HasSubstr("duplicate key \"a\"")));
  std::string deep = "{\"__metadata__\":";
  for (int i = 0; i < 100; ++i)
    deep += "[";
  EXPECT_THAT(errorOf(image(deep)),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("JSON nested more than 64 levels deep")));
}

TEST(Safetensors, RejectsBadMetadataAndEntries) {
  EXPECT_THAT(errorOf(image("{\"__metadata__\":[]}")),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("__metadata__ is not an object")));
  EXPECT_THAT(errorOf(image("{\"__metadata__\":{\"k\":1}}")),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("__metadata__ value of 'k' is not a string")));
  EXPECT_THAT(errorOf(image("{\"\":{}}")),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("a tensor has an empty name")));
  EXPECT_THAT(errorOf(image(one("3"))),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("tensor 'a': expected an object, got a "
                              "number")));
  EXPECT_THAT(
      errorOf(
          image(one("{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4],"
                    "\"extra\":1}"),
                "    ")),
      AllOf(StartsWith("x.safetensors: "),
            HasSubstr(
                "tensor 'a': unexpected key 'extra' (expected dtype, shape and "
                "data_offsets)")));
  EXPECT_THAT(errorOf(image(one("{\"dtype\":\"F32\",\"data_offsets\":[0,4]}"))),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("tensor 'a': missing key 'shape'")));
  EXPECT_THAT(errorOf(image(one("{\"shape\":[],\"data_offsets\":[0,4]}"))),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("tensor 'a': missing key 'dtype'")));
  EXPECT_THAT(errorOf(image(one("{\"dtype\":\"F32\",\"shape\":[]}"))),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("tensor 'a': missing key 'data_offsets'")));
  EXPECT_THAT(
      errorOf(image(one("{\"dtype\":4,\"shape\":[],\"data_offsets\":[0,4]}"))),
      AllOf(StartsWith("x.safetensors: "),
            HasSubstr("tensor 'a': dtype is not a string")));
  EXPECT_THAT(errorOf(image(one(
                  "{\"dtype\":\"F128\",\"shape\":[],\"data_offsets\":[0,4]}"))),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("tensor 'a': unknown dtype 'F128'")));
  EXPECT_THAT(
      errorOf(image(
          one("{\"dtype\":\"f32\",\"shape\":[],\"data_offsets\":[0,4]}"))),
      AllOf(StartsWith("x.safetensors: "), HasSubstr("unknown dtype 'f32'")));
  EXPECT_THAT(errorOf(image(one("{\"dtype\":\"F8_E4M3\",\"shape\":[],"
                                "\"data_offsets\":[0,1]}"))),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("tensor 'a': dtype F8_E4M3 is not supported")));
  EXPECT_THAT(errorOf(image(one(
                  "{\"dtype\":\"F32\",\"shape\":3,\"data_offsets\":[0,4]}"))),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("tensor 'a': shape is not an array")));
  EXPECT_THAT(
      errorOf(image(
          one("{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}"))),
      AllOf(StartsWith("x.safetensors: "),
            HasSubstr(
                "shape has a dimension that is not a non-negative integer")));
  EXPECT_THAT(
      errorOf(image(
          one("{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}"))),
      AllOf(StartsWith("x.safetensors: "),
            HasSubstr(
                "shape has a dimension that is not a non-negative integer")));
  EXPECT_THAT(
      errorOf(image(one("{\"dtype\":\"F32\",\"shape\":["
                        "99999999999999999999],\"data_offsets\":[0,8]}"))),
      AllOf(StartsWith("x.safetensors: "),
            HasSubstr(
                "shape has a dimension that is not a non-negative integer")));
  std::string rank65 = "[";
  for (int i = 0; i < 65; ++i)
    rank65 += i ? ",1" : "1";
  rank65 += "]";
  EXPECT_THAT(errorOf(image(one("{\"dtype\":\"F32\",\"shape\":" + rank65 +
                                ",\"data_offsets\":[0,4]}"))),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("shape has more than 64 dimensions")));
  EXPECT_THAT(
      errorOf(image(one("{\"dtype\":\"F32\",\"shape\":[2097152,2097152],"
                        "\"data_offsets\":[0,4]}"))),
      AllOf(StartsWith("x.safetensors: "),
            HasSubstr("shape [2097152, 2097152] has more than 2^40 elements")));
  for (const char *offsets : {"[0]", "[0,4,8]", "[-1,3]", "[\"0\",4]", "4",
                              "[0,1e1]"})
    EXPECT_THAT(
        errorOf(image(one(std::string("{\"dtype\":\"F32\",\"shape\":[1],"
                                      "\"data_offsets\":") +
                          offsets + "}"))),
        AllOf(StartsWith("x.safetensors: "),
              HasSubstr("tensor 'a': data_offsets is not an array of two "
                        "non-negative integers")));
  EXPECT_THAT(
      errorOf(image(
          one("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}"))),
      AllOf(
          StartsWith("x.safetensors: "),
          HasSubstr("tensor 'a': data_offsets [8, 4] end before they begin")));
  EXPECT_THAT(errorOf(image(one(
                  "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}"))),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("tensor 'a': data_offsets [0, 4] span 4 bytes "
                              "but F32 [2] needs 8")));
  EXPECT_THAT(
      errorOf(image(one("{\"dtype\":\"F32\",\"shape\":[2],"
                        "\"data_offsets\":[0,18446744073709551615]}"))),
      AllOf(StartsWith("x.safetensors: "),
            HasSubstr("span 18446744073709551615 bytes but F32 [2] needs 8")));
}

TEST(Safetensors, RejectsBadDataLayout) {
  auto entry = [](const char *name, const char *dtype, const char *shape,
                  int begin, int end) {
    return std::string("\"") + name + "\":{\"dtype\":\"" + dtype +
           "\",\"shape\":" + shape + ",\"data_offsets\":[" +
           std::to_string(begin) + "," + std::to_string(end) + "]}";
  };
  std::string data16(16, '\0');
  EXPECT_THAT(
      errorOf(image("{" + entry("a", "F32", "[2]", 0, 8) + "," +
                        entry("b", "F32", "[2]", 4, 12) + "}",
                    std::string(12, '\0'))),
      AllOf(StartsWith("x.safetensors: "),
            HasSubstr("tensor 'b' (bytes 4 to 12) overlaps tensor 'a' (bytes 0 "
                      "to 8)")));
  EXPECT_THAT(
      errorOf(image("{" + entry("a", "F32", "[2]", 0, 8) + "," +
                        entry("b", "F32", "[1]", 12, 16) + "}",
                    data16)),
      AllOf(
          StartsWith("x.safetensors: "),
          HasSubstr("4 bytes of data before tensor 'b' belong to no tensor")));
  EXPECT_THAT(
      errorOf(image("{" + entry("a", "F32", "[2]", 8, 16) + "}", data16)),
      AllOf(
          StartsWith("x.safetensors: "),
          HasSubstr("8 bytes of data before tensor 'a' belong to no tensor")));
  EXPECT_THAT(
      errorOf(image("{" + entry("a", "F32", "[4]", 0, 16) + "}",
                    std::string(10, '\0'))),
      AllOf(StartsWith("x.safetensors: "),
            HasSubstr("the tensors cover 16 bytes of data but the file has 10 "
                      "(truncated)")));
  EXPECT_THAT(
      errorOf(image("{" + entry("a", "F32", "[2]", 0, 8) + "}", data16)),
      AllOf(StartsWith("x.safetensors: "),
            HasSubstr("the tensors cover 8 bytes of data but the file has 16 "
                      "(trailing bytes)")));
  EXPECT_THAT(errorOf(image("{}", "x")),
              AllOf(StartsWith("x.safetensors: "),
                    HasSubstr("the tensors cover 0 bytes of data but "
                              "the file has 1 (trailing bytes)")));
  EXPECT_THAT(
      errorOf(image("{" + entry("a", "BOOL", "[3]", 0, 3) + "}",
                    std::string("\x01\x00\x02", 3))),
      AllOf(
          StartsWith("x.safetensors: "),
          HasSubstr("BOOL tensor 'a' has the byte 2 (element 2), not 0 or 1")));
  // Zero-size tensors may sit anywhere in the tiling; {} is an empty file.
  EXPECT_EQ(errorOf(image("{" + entry("z", "F32", "[0]", 8, 8) + "," +
                          entry("a", "F32", "[2]", 0, 8) + "," +
                          entry("y", "I64", "[0,3]", 0, 0) + "}",
                          std::string(8, '\0'))),
            "");
  EXPECT_EQ(errorOf(image("{}")), "");
  EXPECT_EQ(errorOf(image("{\"__metadata__\":null}   ")), "");
  // A name with control characters is shown with '?'.
  EXPECT_THAT(errorOf(image("{\"a\\u0001b\":3}")),
              AllOf(StartsWith("x.safetensors: "), HasSubstr("tensor 'a?b'")));
}

TEST(Safetensors, SurvivesRandomMutations) {
  std::vector<Owned> owned = referenceTensors(true);
  TRC_ASSERT_OK_AND_ASSIGN(std::string valid, encodeSafetensors(viewsOf(owned), {{"k", "v"}}));
  std::mt19937 rng(1234);
  int accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string f = valid;
    int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 4) {
      case 0: // flip a byte of the header or length
        if (!f.empty())
          f[rng() % std::min<size_t>(f.size(), 8 + 0x300)] ^=
              char(1 << (rng() % 8));
        break;
      case 1: // truncate
        f.resize(rng() % (f.size() + 1));
        break;
      case 2: // random byte anywhere
        if (!f.empty())
          f[rng() % f.size()] = char(rng());
        break;
      case 3: // insert a JSON-ish character into the header
        if (f.size() > 9)
          f.insert(f.begin() + 8 + long(rng() % (f.size() - 8)),
                   "{}[],:\"0-e\\"[rng() % 11]);
        break;
      }
    }
    if (decodeSafetensors(f, "m").ok())
      ++accepted;
  }
  // Flips inside tensor data stay valid; most header damage does not.
  EXPECT_LT(accepted, 3000);
}

TEST(Safetensors, EncoderRejectsBadInput) {
  float x[2] = {1, 2};
  auto err = [&](const std::vector<SafetensorsView> &v) {
    Status s = encodeSafetensors(v, {}).status();
    return s ? std::string() : s.message();
  };
  EXPECT_EQ(err({{"a", DType::F32, {2}, x}, {"a", DType::F32, {1}, x}}),
            "duplicate tensor name 'a'");
  EXPECT_EQ(err({{"", DType::F32, {2}, x}}), "a tensor has an empty name");
  EXPECT_EQ(err({{"__metadata__", DType::F32, {2}, x}}),
            "a tensor may not be named __metadata__");
  EXPECT_EQ(err({{"a", DType::F32, {2}, nullptr}}), "tensor 'a' has no data");
  EXPECT_EQ(err({{"a", DType::F32, {-2}, x}}),
            "tensor 'a': shape [-2] is invalid or has more than 2^40 "
            "elements");
  EXPECT_EQ(err({{"a", DType::F32, {0}, nullptr}}), "");
}
