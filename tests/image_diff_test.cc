// What `image build --check` says when a rebuild gives another digest: the image.json fields
// that differ, then layer by layer the files whose bytes or metadata differ (image_diff.h,
// layer_listing.h), on OCI layouts written here; and that a crafted layout or layer is refused
// with the file and position, never followed outside the layout or read without bound.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/failure.h"
#include "base/sha256.h"
#include "image/image_diff.h"
#include "image/layer_listing.h"
#include "test_support.h"

namespace trainlock {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;

struct TarFile {
  std::string path;
  std::string content;
  unsigned mode = 0644;
  long mtime = 1700000000;
  char type = '0';
  std::string link;
  unsigned uid = 0;
};

TarFile F(std::string path, std::string content, unsigned mode = 0644, char type = '0') {
  TarFile f;
  f.path = std::move(path);
  f.content = std::move(content);
  f.mode = mode;
  f.type = type;
  return f;
}

void Octal(std::string& header, size_t at, size_t width, unsigned long long value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*llo", static_cast<int>(width - 1), value);
  header.replace(at, width - 1, buf, width - 1);
}

std::string Header(const std::string& name, uint64_t size, unsigned mode, long mtime, char type,
                   const std::string& link, unsigned uid) {
  std::string h(512, '\0');
  h.replace(0, std::min<size_t>(name.size(), 100), name.substr(0, 100));
  Octal(h, 100, 8, mode);
  Octal(h, 108, 8, uid);
  Octal(h, 116, 8, 0);
  Octal(h, 124, 12, size);
  Octal(h, 136, 12, static_cast<unsigned long long>(mtime));
  h[156] = type;
  h.replace(157, std::min<size_t>(link.size(), 100), link.substr(0, 100));
  h.replace(257, 6, std::string("ustar\0", 6));
  h.replace(263, 2, "00");
  h.replace(148, 8, "        ");
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  char buf[8];
  std::snprintf(buf, sizeof buf, "%06o", sum);
  h.replace(148, 7, std::string(buf, 6) + '\0');
  return h;
}

std::string Padded(std::string data) {
  data.append((512 - data.size() % 512) % 512, '\0');
  return data;
}

std::string Tar(const std::vector<TarFile>& files) {
  std::string out;
  for (const TarFile& f : files) {
    if (f.path.size() > 100) {  // a pax header carries the long path
      std::string record = " path=" + f.path + "\n";
      std::string len = std::to_string(record.size() + 3);
      record = std::to_string(record.size() + len.size()) + record;
      out += Header("PaxHeader", record.size(), 0644, 0, 'x', "", 0) + Padded(record);
    }
    out += Header(f.path, f.content.size(), f.mode, f.mtime, f.type, f.link, f.uid) +
           Padded(f.content);
  }
  return out + std::string(1024, '\0');
}

std::string Gzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void Write(const fs::path& file, const std::string& data) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << data;
}

std::string Blob(const fs::path& layout, const std::string& data) {
  const std::string hex = Sha256Hex(data);
  Write(layout / "blobs" / "sha256" / hex, data);
  return "sha256:" + hex;
}

// An OCI layout at `dir` with `config` and the layers (gzip tar), as buildah writes one.
void Layout(const fs::path& dir, nlohmann::json config,
            const std::vector<std::string>& layer_tars) {
  nlohmann::json layers = nlohmann::json::array();
  config["rootfs"] = {{"type", "layers"}, {"diff_ids", nlohmann::json::array()}};
  for (const std::string& tar : layer_tars) {
    const std::string gz = Gzip(tar);
    layers.push_back({{"mediaType", "application/vnd.oci.image.layer.v1.tar+gzip"},
                      {"digest", Blob(dir, gz)},
                      {"size", gz.size()}});
    config["rootfs"]["diff_ids"].push_back("sha256:" + Sha256Hex(tar));
  }
  const std::string config_text = config.dump();
  nlohmann::json manifest = {{"schemaVersion", 2},
                             {"config",
                              {{"mediaType", "application/vnd.oci.image.config.v1+json"},
                               {"digest", Blob(dir, config_text)},
                               {"size", config_text.size()}}},
                             {"layers", layers}};
  const std::string manifest_text = manifest.dump();
  nlohmann::json index = {{"schemaVersion", 2},
                          {"manifests",
                           {{{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                             {"digest", Blob(dir, manifest_text)}}}}};
  Write(dir / "index.json", index.dump());
  Write(dir / "oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
}

nlohmann::json Config(const std::string& created = "2026-12-02T00:00:00Z") {
  return {
      {"architecture", "amd64"},
      {"os", "linux"},
      {"created", created},
      {"config",
       {{"Env", {"PATH=/usr/bin"}}, {"Entrypoint", {"/opt/trainlock/bin/trainlock-validate"}}}}};
}

std::vector<TarFile> Base() {
  return {F("usr/", "", 0755, '5'), F("usr/bin/tool", "tool v1", 0755),
          F("etc/os-release", "debian 12")};
}

std::vector<TarFile> App() {
  return {F("opt/trainlock/bin/trainlock-validate", "validator bytes"),
          F("opt/trainlock/engine.py", "print(1)")};
}

bool Has(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& line : lines)
    if (line.find(text) != std::string::npos) return true;
  return false;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

class ImageDifference : public ::testing::Test {
 protected:
  TempDir dir_;
  fs::path recorded() const { return dir_.path() / "recorded"; }
  fs::path rebuilt() const { return dir_.path() / "rebuilt"; }
};

TEST_F(ImageDifference, TwoEqualImagesDifferInNothing) {
  Layout(recorded(), Config(), {Tar(Base()), Tar(App())});
  Layout(rebuilt(), Config(), {Tar(Base()), Tar(App())});
  EXPECT_EQ(DescribeImageDifference(recorded(), rebuilt(), 40), std::vector<std::string>{});
}

TEST_F(ImageDifference, AConfigurationFieldIsNamedWithBothValues) {
  Layout(recorded(), Config("2026-12-02T00:00:00Z"), {Tar(Base())});
  Layout(rebuilt(), Config("2026-12-03T09:00:00Z"), {Tar(Base())});
  const auto lines = DescribeImageDifference(recorded(), rebuilt(), 40);
  EXPECT_TRUE(Has(lines, "image.json created: 2026-12-02T00:00:00Z -> 2026-12-03T09:00:00Z"))
      << Joined(lines);
  EXPECT_EQ(lines.size(), 1u) << Joined(lines);
}

TEST_F(ImageDifference, AFileWhoseBytesDifferIsNamedWithItsLayer) {
  std::vector<TarFile> app = App();
  app[1].content = "print(2)";
  Layout(recorded(), Config(), {Tar(Base()), Tar(App())});
  Layout(rebuilt(), Config(), {Tar(Base()), Tar(app)});
  const auto lines = DescribeImageDifference(recorded(), rebuilt(), 40);
  EXPECT_TRUE(Has(lines, "layer 2 of 2: opt/trainlock/engine.py: content (8 bytes, sha256 "))
      << Joined(lines);
  EXPECT_FALSE(Has(lines, "layer 1 of 2")) << Joined(lines);
  EXPECT_TRUE(Has(lines, "image.json rootfs.diff_ids[1]")) << Joined(lines);
}

TEST_F(ImageDifference, ModeOwnerAndModificationTimeAreNamed) {
  std::vector<TarFile> base = Base();
  base[1].mode = 0700;
  base[1].uid = 1000;
  base[2].mtime = 1800000000;
  Layout(recorded(), Config(), {Tar(Base())});
  Layout(rebuilt(), Config(), {Tar(base)});
  const auto lines = DescribeImageDifference(recorded(), rebuilt(), 40);
  EXPECT_TRUE(Has(lines, "usr/bin/tool: mode 0755 -> 0700, owner 0:0 -> 1000:0")) << Joined(lines);
  EXPECT_TRUE(Has(lines, "etc/os-release: mtime 1700000000 -> 1800000000")) << Joined(lines);
}

TEST_F(ImageDifference, FilesOnOneSideOnlyAreNamed) {
  std::vector<TarFile> app = App();
  app.pop_back();
  app.push_back(F("opt/trainlock/extra.txt", "new"));
  Layout(recorded(), Config(), {Tar(App())});
  Layout(rebuilt(), Config(), {Tar(app)});
  const auto lines = DescribeImageDifference(recorded(), rebuilt(), 40);
  EXPECT_TRUE(Has(lines, "opt/trainlock/engine.py: only in the recorded image")) << Joined(lines);
  EXPECT_TRUE(Has(lines, "opt/trainlock/extra.txt: only in the rebuild")) << Joined(lines);
}

TEST_F(ImageDifference, APathLongerThanATarNameComesFromItsPaxHeader) {
  const std::string deep = "opt/" + std::string(110, 'd') + "/file.py";
  std::vector<TarFile> a = {F(deep, "one")}, b = {F(deep, "two")};
  Layout(recorded(), Config(), {Tar(a)});
  Layout(rebuilt(), Config(), {Tar(b)});
  const auto lines = DescribeImageDifference(recorded(), rebuilt(), 40);
  EXPECT_TRUE(Has(lines, deep + ": content")) << Joined(lines);
}

TEST_F(ImageDifference, ManyDifferencesAreCutWithACount) {
  std::vector<TarFile> a, b;
  for (int i = 0; i < 30; ++i) {
    a.push_back(F("f" + std::to_string(i), "a"));
    b.push_back(F("f" + std::to_string(i), "b"));
  }
  Layout(recorded(), Config(), {Tar(a)});
  Layout(rebuilt(), Config(), {Tar(b)});
  const auto lines = DescribeImageDifference(recorded(), rebuilt(), 10);
  ASSERT_EQ(lines.size(), 11u) << Joined(lines);
  EXPECT_TRUE(lines.back().starts_with("... and at least ")) << lines.back();
}

TEST_F(ImageDifference, ABidiOrControlCharacterInAFileNameIsEscaped) {
  std::vector<TarFile> a = {F("evil\u202Egnp.py", "1")}, b = {F("evil\u202Egnp.py", "2")};
  Layout(recorded(), Config(), {Tar(a)});
  Layout(rebuilt(), Config(), {Tar(b)});
  const auto lines = DescribeImageDifference(recorded(), rebuilt(), 40);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(Joined(lines).find("\u202E"), std::string::npos) << Joined(lines);
}

// A layer's path with a newline in it stays on its line: printed as a note of --check's
// failure it would otherwise start an unprefixed line of its own ("layer 1 of 1: ..." forged).
TEST_F(ImageDifference, ANewlineInAFileNameIsEscapedNotALineOfItsOwn) {
  const std::string path = "a\nlayer 9 of 9: etc/passwd: content (forged)";
  std::vector<TarFile> a = {F(path, "1")}, b = {F(path, "2")};
  Layout(recorded(), Config(), {Tar(a)});
  Layout(rebuilt(), Config(), {Tar(b)});
  const auto lines = DescribeImageDifference(recorded(), rebuilt(), 40);
  ASSERT_FALSE(lines.empty());
  for (const std::string& line : lines) EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_TRUE(Has(lines, "layer 1 of 1: a\\x0alayer 9 of 9")) << Joined(lines);
}

// ---- bounded whatever the recorded image holds (issue #61) ----

// The peak resident memory `body` adds, measured in a child process of its own: ASan's own
// reservations are virtual, so what counts is what is resident.
long PeakMemoryMiBOf(const std::function<void()>& body) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    rusage before{};
    ::getrusage(RUSAGE_SELF, &before);
    try {
      body();
    } catch (...) {
    }
    rusage after{};
    ::getrusage(RUSAGE_SELF, &after);
    const long mib = (after.ru_maxrss - before.ru_maxrss) / 1024;
    (void)!::write(fds[1], &mib, sizeof mib);
    ::_exit(0);
  }
  ::close(fds[1]);
  long mib = -1;
  EXPECT_EQ(::read(fds[0], &mib, sizeof mib), static_cast<ssize_t>(sizeof mib));
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  return mib;
}

// `{"deep": {K1: {K2: ... {"l0": v, ..., "l999": v}}}}` with 16 keys of 64 KiB: about 1 MiB of
// JSON whose every leaf has a 1 MiB path.
nlohmann::json DeepConfig(const std::string& value) {
  nlohmann::json leaves = nlohmann::json::object();
  for (int i = 0; i < 1000; ++i) leaves["l" + std::to_string(i)] = value;
  nlohmann::json deep = leaves;
  for (int level = 0; level < 16; ++level)
    deep = nlohmann::json{{std::string(64 << 10, static_cast<char>('a' + level)), deep}};
  nlohmann::json config = Config();
  config["deep"] = deep;
  return config;
}

// Flattening every leaf before the 40-line cut took 1 GiB for 7.6 MiB of JSON: here two 1 MiB
// configurations whose 1000 differing leaves each have a 1 MiB path took some 3 GiB.
TEST_F(ImageDifference, DifferingConfigurationsAreComparedInBoundedMemory) {
  Layout(recorded(), DeepConfig("recorded"), {Tar(Base())});
  Layout(rebuilt(), DeepConfig("rebuilt"), {Tar(Base())});
  std::vector<std::string> lines;
  const long mib =
      PeakMemoryMiBOf([&] { lines = DescribeImageDifference(recorded(), rebuilt(), 40); });
  EXPECT_LT(mib, 256) << "MiB";
  lines = DescribeImageDifference(recorded(), rebuilt(), 40);
  ASSERT_EQ(lines.size(), 20u) << Joined(lines);
  EXPECT_EQ(lines.back(), "image.json: ... and 981 more fields");
  for (const std::string& line : lines) EXPECT_LT(line.size(), 1000u) << line.substr(0, 200);
}

TEST_F(ImageDifference, AConfigurationOverItsSizeCapIsRefusedInOneLine) {
  nlohmann::json big = Config();
  big["config"]["Env"].push_back("X=" + std::string(kMaxLayoutJsonBytes, 'x'));
  Layout(recorded(), big, {Tar(Base())});
  Layout(rebuilt(), Config(), {Tar(Base())});
  try {
    DescribeImageDifference(recorded(), rebuilt(), 40);
    FAIL() << "a configuration over the cap was read";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find(": more than 4 MiB, the limit of an image's index, "
                                         "manifest or configuration"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

TEST_F(ImageDifference, ConfigurationsOverTheLeafCapAreRefused) {
  nlohmann::json many = Config();
  many["many"] = nlohmann::json::array();
  for (size_t i = 0; i < kMaxConfigLeaves / 2 + 1; ++i) many["many"].push_back(0);
  Layout(recorded(), many, {Tar(Base())});
  Layout(rebuilt(), many, {Tar(Base())});
  try {
    DescribeImageDifference(recorded(), rebuilt(), 40);
    FAIL() << "configurations over the leaf cap were compared";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("image.json: more than 1000000 leaves"), std::string::npos)
        << e.what();
  }
}

// A layer's bytes bound the time its reading takes (3.5 s per GiB): each layer has its cap,
// and all the layers one comparison reads share another (one small gzip blob, listed as every
// layer, once decompressed to its 256 GiB cap as often as the manifest listed it).
TEST_F(ImageDifference, ALayerOverItsCapIsRefusedNamingTheCap) {
  Layout(recorded(), Config(), {Tar({F("big", std::string(2 << 20, 'a'))})});
  Layout(rebuilt(), Config(), {Tar({F("big", std::string(2 << 20, 'b'))})});
  try {
    DescribeImageDifference(recorded(), rebuilt(), DifferenceLimits{40, 1 << 20, 64 << 20});
    FAIL() << "a layer over its cap was read";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("more bytes uncompressed than a layer's limit"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ImageDifference, LayersOverTheComparisonsSharedCapAreRefused) {
  std::vector<std::string> a, b;
  for (int i = 0; i < 4; ++i) {
    a.push_back(Tar({F("f" + std::to_string(i), std::string(800 << 10, 'a'))}));
    b.push_back(Tar({F("f" + std::to_string(i), std::string(800 << 10, 'b'))}));
  }
  Layout(recorded(), Config(), a);
  Layout(rebuilt(), Config(), b);
  EXPECT_EQ(
      DescribeImageDifference(recorded(), rebuilt(), DifferenceLimits{40, 1 << 20, 8 << 20}).size(),
      8u);  // four diff_ids and one file a layer
  try {
    DescribeImageDifference(recorded(), rebuilt(), DifferenceLimits{40, 1 << 20, 4 << 20});
    FAIL() << "layers over the shared cap were read";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("what is left of the comparison's limit"),
              std::string::npos)
        << e.what();
  }
}

TEST(LayerListing, AListingOverItsMemoryCapIsRefused) {
  TarReader reader("layer");
  const std::string name_part(60 << 10, 'n');
  try {
    for (size_t i = 0; i < 2 * kMaxLayerListingBytes / (60 << 10); ++i) {
      std::string record = " path=" + name_part + std::to_string(i) + "\n";
      record = std::to_string(record.size() + std::to_string(record.size()).size()) + record;
      reader.Feed(Header("PaxHeader", record.size(), 0644, 0, 'x', "", 0) + Padded(record) +
                  Header("x", 0, 0644, 0, '0', "", 0));
    }
    FAIL() << "the listing grew past its cap";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("a listing over 128 MiB"), std::string::npos) << e.what();
  }
}

TEST(LayerListing, AMultiMemberGzipLayerIsReadToItsEnd) {
  TempDir dir;
  const std::string tar = Tar({F("a", "first"), F("b", "second")});
  const std::string half = tar.substr(0, 1024), rest = tar.substr(1024);
  Write(dir.path() / "layer", Gzip(half) + Gzip(rest));
  const LayerListing listing = ListLayerFile(dir.path() / "layer", "layer");
  ASSERT_EQ(listing.size(), 2u);
  EXPECT_EQ(listing.at("b").sha256, Sha256Hex("second"));
}

TEST(LayerListing, ATruncatedArchiveIsRefusedWithItsOffset) {
  TempDir dir;
  const std::string tar = Tar({F("a", std::string(2000, 'x'))});
  Write(dir.path() / "layer", tar.substr(0, 1500));
  try {
    ListLayerFile(dir.path() / "layer", "layer");
    FAIL() << "a truncated archive was listed";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("layer: the archive ends inside an entry at byte 1500"),
              std::string::npos)
        << e.what();
  }
}

TEST(LayerListing, AHeaderWhoseChecksumFailsIsRefused) {
  TempDir dir;
  std::string tar = Tar({F("a", "x")});
  tar[0] = 'b';
  Write(dir.path() / "layer", tar);
  EXPECT_THROW(ListLayerFile(dir.path() / "layer", "layer"), Failure);
}

TEST(LayerListing, AnOversizedExtendedHeaderIsRefusedBeforeItIsRead) {
  TarReader reader("layer");
  try {
    reader.Feed(Header("PaxHeader", 1ull << 32, 0644, 0, 'x', "", 0));
    FAIL() << "a 4 GiB pax header was accepted";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("an extended header of 4294967296 bytes at byte 0"),
              std::string::npos)
        << e.what();
  }
}

// Issue #61: records "11 a=bcdef", "12 c=defghi" and one whose length wraps pos + len around
// 2^64 back to the second record looped forever at 100 % CPU; the length is refused instead.
TEST(LayerListing, APaxRecordLengthThatWouldWrapAroundIsRefusedNotLoopedOn) {
  const std::string records = "11 a=bcdef\n12 c=defghi\n18446744073709551604 d=e\n";
  const std::string tar = Header("PaxHeader", records.size(), 0644, 0, 'x', "", 0) +
                          Padded(records) + Header("a", 1, 0644, 0, '0', "", 0) + Padded("x") +
                          std::string(1024, '\0');
  TarReader reader("layer");
  try {
    reader.Feed(tar);
    reader.Finish();
    FAIL() << "the wrapping pax length was accepted";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("a malformed pax record"), std::string::npos) << e.what();
  }
}

// The same with a 19-digit length: within the digits a record may have, past the header's end.
TEST(LayerListing, APaxRecordLongerThanItsHeaderIsRefused) {
  const std::string records = "11 a=bcdef\n9223372036854775807 d=e\n";
  TarReader reader("layer");
  try {
    reader.Feed(Header("PaxHeader", records.size(), 0644, 0, 'x', "", 0) + Padded(records) +
                Header("a", 1, 0644, 0, '0', "", 0) + Padded("x") + std::string(1024, '\0'));
    reader.Finish();
    FAIL() << "a pax length past the header was accepted";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("a pax record whose length does not match"),
              std::string::npos)
        << e.what();
  }
}

TEST(LayerListing, APaxPathLongerThanTheNameCapIsRefused) {
  TarReader reader("layer");
  try {
    reader.Feed(Tar({F(std::string(kMaxLayerNameBytes + 1, 'p'), "")}));
    FAIL() << "a path over the cap was listed";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("a name longer than 65536 bytes"), std::string::npos)
        << e.what();
  }
}

TEST(LayerListing, AZstdLayerIsNamedNotMisread) {
  TempDir dir;
  Write(dir.path() / "layer", std::string("\x28\xb5\x2f\xfd", 4) + std::string(100, 'z'));
  try {
    ListLayerFile(dir.path() / "layer", "layer");
    FAIL() << "a zstd layer was listed";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("zstd"), std::string::npos) << e.what();
  }
}

TEST(OciLayout, ABlobDigestThatIsNotSha256HexIsRefused) {
  TempDir dir;
  Write(dir.path() / "index.json", R"({"manifests":[{"digest":"sha256:../../../etc/passwd"}]})");
  try {
    ReadOciLayout(dir.path());
    FAIL() << "a path-like digest was followed";
  } catch (const Failure& e) {
    EXPECT_NE(std::string(e.what()).find("index.json: its first manifest has no sha256 digest"),
              std::string::npos)
        << e.what();
  }
}

TEST(OciLayout, ABlobThatIsASymlinkIsNotFollowed) {
  TempDir dir;
  Layout(dir.path(), Config(), {Tar(Base())});
  const OciLayoutImage image = ReadOciLayout(dir.path());
  fs::remove(image.layers[0]);
  Write(dir.path() / "outside", Gzip(Tar(Base())));
  fs::create_symlink(dir.path() / "outside", image.layers[0]);
  EXPECT_THROW(ListLayerFile(image.layers[0], image.layers[0].string()), Failure);
}

}  // namespace
}  // namespace trainlock
