// safetensors reading and writing: every dtype the validator uses round-trips bitwise with its
// name; the bytes on disk follow the format (8-byte little-endian header length, a JSON header of
// dtype/shape/data_offsets plus string __metadata__, an 8-aligned data section packed from offset
// 0); the reported size and sha256 are those of the file; writing is deterministic; and every
// malformed file is refused with a SafetensorsError naming the file and the problem.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "base/failure.h"
#include "base/sha256.h"
#include "engines/native/safetensors.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

// The 8-byte little-endian length prefix of a safetensors file.
std::string LengthPrefix(uint64_t length) {
  std::string prefix(8, '\0');
  for (int i = 0; i < 8; ++i) prefix[static_cast<size_t>(i)] = static_cast<char>(length >> (8 * i));
  return prefix;
}

// A hand-made file: the length prefix, `header` verbatim, then `data`.
std::string Craft(const std::string& header, const std::string& data) {
  return LengthPrefix(header.size()) + header + data;
}

uint64_t HeaderLength(const std::string& bytes) {
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) {
    length = (length << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  }
  return length;
}

// The what() of the SafetensorsError that reading `file` throws; "" (and a failure) if none.
std::string ReadError(const fs::path& file) {
  try {
    ReadSafetensors(file);
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  ADD_FAILURE() << "reading " << file << " did not throw";
  return "";
}

std::vector<NamedTensor> SampleTensors() {
  torch::manual_seed(7);
  return {
      {"f32", torch::randn({3, 4})},
      {"bf16", torch::randn({5}).to(torch::kBFloat16)},
      {"f16", torch::randn({2, 3}).to(torch::kHalf)},
      {"i64", torch::arange(-4, 6, torch::kLong).view({2, 5})},
      {"u8", torch::randint(0, 256, {7}, torch::kByte)},
      {"scalar", torch::scalar_tensor(3.25, torch::kFloat)},
  };
}

class SafetensorsTest : public ::testing::Test {
 protected:
  fs::path Path(const std::string& name) const { return dir_.path() / name; }
  fs::path Write(const std::string& name, const std::string& bytes) const {
    WriteFile(Path(name), bytes);
    return Path(name);
  }
  TempDir dir_;
};

TEST_F(SafetensorsTest, RoundTripsEveryDtypeBitwiseWithItsName) {
  std::vector<NamedTensor> tensors = SampleTensors();
  WriteSafetensors(Path("t.safetensors"), tensors);
  std::map<std::string, torch::Tensor> read = ReadSafetensors(Path("t.safetensors"));
  ASSERT_EQ(read.size(), tensors.size());
  for (const NamedTensor& t : tensors) {
    ASSERT_TRUE(read.count(t.name)) << t.name;
    const torch::Tensor& got = read.at(t.name);
    EXPECT_EQ(got.scalar_type(), t.tensor.scalar_type()) << t.name;
    EXPECT_EQ(got.sizes(), t.tensor.sizes()) << t.name;
    EXPECT_TRUE(torch::equal(got, t.tensor)) << t.name;
  }
  EXPECT_EQ(read.at("scalar").dim(), 0);
}

TEST_F(SafetensorsTest, WritesANonContiguousViewAsItsValues) {
  torch::Tensor base = torch::arange(12, torch::kFloat).view({3, 4});
  torch::Tensor transposed = base.t();
  ASSERT_FALSE(transposed.is_contiguous());
  WriteSafetensors(Path("t.safetensors"), {{"t", transposed}});
  EXPECT_TRUE(torch::equal(ReadSafetensors(Path("t.safetensors")).at("t"), transposed));
}

TEST_F(SafetensorsTest, RoundTripsAnEmptyTensor) {
  WriteSafetensors(Path("t.safetensors"),
                   {{"empty", torch::zeros({0, 3})}, {"x", torch::ones({2})}});
  std::map<std::string, torch::Tensor> read = ReadSafetensors(Path("t.safetensors"));
  EXPECT_EQ(read.at("empty").sizes(), (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(torch::equal(read.at("x"), torch::ones({2})));
}

TEST_F(SafetensorsTest, FileLayoutFollowsTheSafetensorsFormat) {
  std::vector<NamedTensor> tensors = SampleTensors();
  WriteSafetensors(Path("t.safetensors"), tensors, {{"format", "pt"}, {"step", "7"}});
  const std::string bytes = ReadFile(Path("t.safetensors"));
  ASSERT_GE(bytes.size(), 8u);
  const uint64_t n = HeaderLength(bytes);
  ASSERT_LE(8 + n, bytes.size());
  EXPECT_EQ(n % 8, 0u) << "the data section must start 8-aligned";
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
  ASSERT_TRUE(header.is_object());

  EXPECT_EQ(header["__metadata__"], (nlohmann::json{{"format", "pt"}, {"step", "7"}}));
  EXPECT_EQ(header.size(), tensors.size() + 1);

  const std::map<std::string, std::string> dtypes = {{"f32", "F32"}, {"bf16", "BF16"},
                                                     {"f16", "F16"}, {"i64", "I64"},
                                                     {"u8", "U8"},   {"scalar", "F32"}};
  const std::string data = bytes.substr(8 + n);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const NamedTensor& t : tensors) {
    SCOPED_TRACE(t.name);
    ASSERT_TRUE(header.contains(t.name));
    const nlohmann::json& entry = header[t.name];
    EXPECT_EQ(entry["dtype"], dtypes.at(t.name));
    EXPECT_EQ(entry["shape"].get<std::vector<int64_t>>(), t.tensor.sizes().vec());
    ASSERT_EQ(entry["data_offsets"].size(), 2u);
    const uint64_t begin = entry["data_offsets"][0].get<uint64_t>();
    const uint64_t end = entry["data_offsets"][1].get<uint64_t>();
    const uint64_t size = static_cast<uint64_t>(t.tensor.numel()) * t.tensor.element_size();
    ASSERT_EQ(end - begin, size);
    ASSERT_LE(end, data.size());
    // The raw bytes are the tensor's own (little-endian) memory.
    EXPECT_EQ(std::memcmp(data.data() + begin, t.tensor.contiguous().data_ptr(), size), 0);
    ranges.emplace_back(begin, end);
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t cursor = 0;
  for (const auto& [begin, end] : ranges) {
    EXPECT_EQ(begin, cursor) << "data_offsets must be contiguous from 0";
    cursor = end;
  }
  EXPECT_EQ(cursor, data.size()) << "the data section holds exactly the tensors";
}

// Older Hugging Face loaders (transformers' load_state_dict) refuse a file whose metadata
// lacks "format": "pt"; every file the native engine writes carries it.
TEST_F(SafetensorsTest, WritesTheFormatMetadataHuggingFaceLoadersRequire) {
  WriteSafetensors(Path("t.safetensors"), {{"x", torch::ones({2})}});
  const std::string bytes = ReadFile(Path("t.safetensors"));
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, HeaderLength(bytes)));
  EXPECT_EQ(header["__metadata__"], (nlohmann::json{{"format", "pt"}}));
}

TEST_F(SafetensorsTest, AFileWithoutMetadataStillReads) {
  fs::path file = Write(
      "bare.safetensors",
      Craft(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0')));
  std::map<std::string, torch::Tensor> read = ReadSafetensors(file);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_TRUE(torch::equal(read.at("x"), torch::zeros({2})));
}

TEST_F(SafetensorsTest, ReportsTheFilesSizeAndSha256) {
  WrittenFile written = WriteSafetensors(Path("t.safetensors"), SampleTensors(), {{"k", "v"}});
  uint64_t size = 0;
  EXPECT_EQ(written.sha256, Sha256FileHex(Path("t.safetensors"), &size));
  EXPECT_EQ(written.bytes, size);
  EXPECT_EQ(written.bytes, fs::file_size(Path("t.safetensors")));
}

TEST_F(SafetensorsTest, WritingTheSameTensorsTwiceGivesIdenticalBytes) {
  WrittenFile a = WriteSafetensors(Path("a.safetensors"), SampleTensors(), {{"k", "v"}});
  WrittenFile b = WriteSafetensors(Path("b.safetensors"), SampleTensors(), {{"k", "v"}});
  EXPECT_EQ(ReadFile(Path("a.safetensors")), ReadFile(Path("b.safetensors")));
  EXPECT_EQ(a.sha256, b.sha256);
}

TEST_F(SafetensorsTest, OutputDoesNotDependOnTheOrderTensorsAreGivenIn) {
  std::vector<NamedTensor> tensors = SampleTensors();
  WriteSafetensors(Path("a.safetensors"), tensors);
  std::reverse(tensors.begin(), tensors.end());
  WriteSafetensors(Path("b.safetensors"), tensors);
  EXPECT_EQ(ReadFile(Path("a.safetensors")), ReadFile(Path("b.safetensors")));
}

TEST_F(SafetensorsTest, ReadsAHandWrittenFile) {
  float values[2] = {1.5f, -2.0f};
  std::string data(reinterpret_cast<const char*>(values), sizeof values);
  fs::path file = Write(
      "t.safetensors",
      Craft(R"({"__metadata__":{"a":"b"},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
            data));
  std::map<std::string, torch::Tensor> read = ReadSafetensors(file);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_TRUE(torch::equal(read.at("x"), torch::tensor({1.5f, -2.0f})));
}

TEST_F(SafetensorsTest, RefusesAFileShorterThanTheLengthPrefix) {
  fs::path file = Write("short.safetensors", "abc");
  std::string error = ReadError(file);
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
}

TEST_F(SafetensorsTest, RefusesAnEmptyFile) {
  fs::path file = Write("empty.safetensors", "");
  std::string error = ReadError(file);
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
}

TEST_F(SafetensorsTest, RefusesAHeaderLengthLargerThanTheFile) {
  const std::string header = R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  fs::path file = Write("long.safetensors", LengthPrefix(1000) + header + "A");
  std::string error = ReadError(file);
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
  EXPECT_NE(error.find("header length 1000"), std::string::npos) << error;
  EXPECT_NE(error.find("exceeds the file"), std::string::npos) << error;
}

TEST_F(SafetensorsTest, RefusesAHeaderLengthThatWouldOverflow) {
  fs::path file = Write("huge.safetensors", LengthPrefix(~uint64_t{0}) + "{}");
  std::string error = ReadError(file);
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
  EXPECT_NE(error.find("exceeds the file"), std::string::npos) << error;
}

TEST_F(SafetensorsTest, RefusesAHeaderThatIsNotJson) {
  fs::path file = Write("bad.safetensors", Craft("{not json at all", ""));
  std::string error = ReadError(file);
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
  EXPECT_NE(error.find("JSON"), std::string::npos) << error;
}

TEST_F(SafetensorsTest, RefusesAHeaderThatIsNotAJsonObject) {
  fs::path file = Write("array.safetensors", Craft("[1, 2, 3]", ""));
  std::string error = ReadError(file);
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
  EXPECT_NE(error.find("not a JSON object"), std::string::npos) << error;
}

TEST_F(SafetensorsTest, RefusesAnUnsupportedDtype) {
  for (const std::string dtype : {"F8_E4M3", "X"}) {
    SCOPED_TRACE(dtype);
    fs::path file =
        Write("dtype.safetensors",
              Craft(R"({"w":{"dtype":")" + dtype + R"(","shape":[1],"data_offsets":[0,1]}})", "A"));
    std::string error = ReadError(file);
    EXPECT_NE(error.find(file.string()), std::string::npos) << error;
    EXPECT_NE(error.find("'w'"), std::string::npos) << error;
    EXPECT_NE(error.find("unsupported dtype '" + dtype + "'"), std::string::npos) << error;
  }
}

TEST_F(SafetensorsTest, RefusesAnEntryWithoutDtypeShapeOrOffsets) {
  fs::path file = Write("entry.safetensors", Craft(R"({"w":{"dtype":"U8","shape":[1]}})", "A"));
  std::string error = ReadError(file);
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
  EXPECT_NE(error.find("'w'"), std::string::npos) << error;
  EXPECT_NE(error.find("data_offsets"), std::string::npos) << error;
}

TEST_F(SafetensorsTest, RefusesANegativeDimension) {
  fs::path file = Write("neg.safetensors",
                        Craft(R"({"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", "A"));
  std::string error = ReadError(file);
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
  EXPECT_NE(error.find("non-negative"), std::string::npos) << error;
}

TEST_F(SafetensorsTest, RefusesATruncatedFile) {
  fs::path file = Path("t.safetensors");
  WriteSafetensors(file, SampleTensors());
  fs::resize_file(file, fs::file_size(file) - 3);
  std::string error = ReadError(file);
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
  EXPECT_NE(error.find("outside"), std::string::npos) << error;
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
}

TEST_F(SafetensorsTest, RefusesOffsetsThatDoNotMatchShapeAndDtype) {
  // A 2x2 F32 tensor needs 16 bytes; the header gives it 12.
  fs::path file = Write(
      "count.safetensors",
      Craft(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", std::string(12, '\0')));
  std::string error = ReadError(file);
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
  EXPECT_NE(error.find("'w'"), std::string::npos) << error;
  EXPECT_NE(error.find("12 bytes"), std::string::npos) << error;
  EXPECT_NE(error.find("needs 16"), std::string::npos) << error;
}

TEST_F(SafetensorsTest, RefusesAGapBetweenTensors) {
  fs::path file =
      Write("gap.safetensors", Craft(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                     R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                     std::string(12, '\0')));
  std::string error = ReadError(file);
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
  EXPECT_NE(error.find("gap"), std::string::npos) << error;
}

TEST_F(SafetensorsTest, RefusesOverlappingTensors) {
  fs::path file =
      Write("overlap.safetensors", Craft(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                         std::string(4, '\0')));
  std::string error = ReadError(file);
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
  EXPECT_NE(error.find("overlaps"), std::string::npos) << error;
}

TEST_F(SafetensorsTest, RefusesTrailingBytesAfterTheLastTensor) {
  fs::path file = Write(
      "trailing.safetensors",
      Craft(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", std::string(9, '\0')));
  std::string error = ReadError(file);
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
  EXPECT_NE(error.find("5 bytes after the last tensor"), std::string::npos) << error;
}

TEST_F(SafetensorsTest, RefusesATensorNamedTwice) {
  fs::path file =
      Write("twice.safetensors", Craft(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                       R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                       std::string(8, '\0')));
  EXPECT_EQ(ReadError(file), file.string() +
                                 ": header refused: member 'a' appears twice in one object at "
                                 "line 1, column 55");
}

TEST_F(SafetensorsTest, RefusesAShapeWhoseElementCountWrapsAroundToZero) {
  // 2^40 * 2^24 elements is 2^64: zero bytes once the product wraps, which matched [0, 0).
  fs::path file = Write(
      "wrap.safetensors",
      Craft(R"({"w":{"dtype":"U8","shape":[1099511627776,16777216],"data_offsets":[0,0]}})", ""));
  EXPECT_EQ(ReadError(file),
            file.string() + ": tensor 'w': shape is too large (over 2^40 elements)");
}

TEST_F(SafetensorsTest, RefusesAHeaderNestedDeeperThanTheJsonLimit) {
  fs::path file =
      Write("deep.safetensors",
            Craft(R"({"__metadata__":)" + std::string(100, '[') + std::string(100, ']') + "}", ""));
  EXPECT_EQ(ReadError(file), file.string() +
                                 ": header refused: JSON nested deeper than 64 levels of arrays "
                                 "and objects at line 1, column 80");
}

TEST_F(SafetensorsTest, RefusesAHeaderLengthOverTheLimitEvenInsideALargeFile) {
  fs::path file = Write("vast.safetensors", LengthPrefix((uint64_t{100} << 20) + 8) + "{}");
  fs::resize_file(file, (uint64_t{101} << 20));  // sparse: the length now fits the file
  EXPECT_EQ(ReadError(file),
            file.string() + ": header length 104857608 is over the limit of 104857600 bytes");
}

TEST_F(SafetensorsTest, RefusesAFifoWithoutWaitingForAWriter) {
  fs::path fifo = Path("pipe.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ReadError(fifo), fifo.string() + ": not a regular file");
}

TEST_F(SafetensorsTest, AMissingFileIsAnErrorNamingIt) {
  fs::path file = Path("absent.safetensors");
  try {
    ReadSafetensors(file);
    ADD_FAILURE() << "reading a missing file did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
}

TEST_F(SafetensorsTest, AnUnreadableFileIsASafetensorsError) {
  fs::path file = Path("absent.safetensors");
  std::string error = ReadError(file);
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
}

TEST(SafetensorsDtypeTest, NamesEachSupportedTypeAndRefusesOthers) {
  EXPECT_EQ(SafetensorsDtype(at::kFloat), "F32");
  EXPECT_EQ(SafetensorsDtype(at::kBFloat16), "BF16");
  EXPECT_EQ(SafetensorsDtype(at::kHalf), "F16");
  EXPECT_EQ(SafetensorsDtype(at::kLong), "I64");
  EXPECT_EQ(SafetensorsDtype(at::kByte), "U8");
  EXPECT_EQ(SafetensorsDtype(at::kBool), "BOOL");
  EXPECT_THROW(SafetensorsDtype(at::kComplexFloat), Failure);
}

}  // namespace
}  // namespace trainlock::validate
