// Every manifest and lock field that reaches a generated Containerfile, requirements.txt or a
// RUN line is checked against its grammar when the file is read, and what the generator writes
// into a shell line is single-quoted. Shell syntax ($( ), ${ }, backticks, quotes, newlines) fed
// through each field is refused at the manifest and at the lock, naming file:line; what a URL
// may legitimately hold (";", "&", "(", "%24", ...) reaches the RUN line and runs under sh -c as
// the literal it is, the marker file never created (tests/debian_step_test.cc runs that step).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "base/diagnostic.h"
#include "project/lockfile_loader.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::SourceDir;
using testing::WriteFile;

// What a shell would run if it saw the value unquoted or double-quoted.
const std::vector<std::string> kShellSyntax = {
    "$(touch X)", "${HOME}", "`touch X`", "a\nRUN touch X", "\"", "'", " x"};

// A TOML basic string holding `value`.
std::string TomlString(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out + "\"";
}

// One field that reaches the image: its key under [targets.cpu] (or elsewhere), and the line
// that sets it to a value with `payload` inside.
struct ImageField {
  std::string key;
  std::string (*line)(const std::string& payload);
};

const std::vector<ImageField>& ImageFields() {
  static const std::vector<ImageField> fields = {
      {"apt-archive",
       [](const std::string& p) {
         return "apt-archive = " + TomlString("http://deb.example/ok" + p) + "\n";
       }},
      {"apt-suite",
       [](const std::string& p) { return "apt-suite = " + TomlString("bookworm" + p) + "\n"; }},
      {"apt-snapshot",
       [](const std::string& p) {
         return "apt-snapshot = " + TomlString("20261201T000000Z" + p) + "\n";
       }},
      {"python-index",
       [](const std::string& p) {
         return "python-index = [" + TomlString("http://127.0.0.1:8765/simple" + p) + "]\n";
       }},
      {"base",
       [](const std::string& p) {
         return "base = " + TomlString("docker.io/library/debian" + p + ":bookworm") + "\n";
       }},
      {"debian-packages",
       [](const std::string& p) {
         return "debian-packages = [" + TomlString("libfoo" + p) + "]\n";
       }},
      {"config",
       [](const std::string& p) {
         return "config = " + TomlString("configs/tiny" + p + ".yaml") + "\n";
       }},
      {"library",
       [](const std::string& p) {
         return "library = " + TomlString("ops/libop" + p + ".so") + "\n";
       }},
      {"source",
       [](const std::string& p) {
         return "library = \"ops/libop.so\"\nsource = " + TomlString("../ops" + p) + "\n";
       }},
  };
  return fields;
}

// `text` (examples/tiny's manifest or lock) with `line` in place: replacing the key's line of
// [targets.cpu] or [project] where it has one, else added to [targets.cpu], or, for a custom
// op's keys, as a [[custom-ops]] table at the end. Sets *line_number to where it went.
std::string With(std::string text, const std::string& key, const std::string& line,
                 int* line_number) {
  size_t at;
  if (key == "library" || key == "source") {
    text += "\n[[custom-ops]]\n";
    at = text.size();
    text += line;
  } else {
    const std::string header = key == "config" ? "[project]\n" : "[targets.cpu]\n";
    const size_t section = text.find(header) + header.size();
    at = text.find("\n" + key + " = ", section - 1);
    const size_t next_section = text.find("\n[", section);
    if (at != std::string::npos && at < next_section) {
      ++at;
      text.replace(at, text.find('\n', at) + 1 - at, line);
    } else {
      at = section;
      text.insert(at, line);
    }
  }
  *line_number = 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
  if (key == "source") ++*line_number;  // after its library line
  return text;
}

// The diagnostics of reading `text` as `path`; none when it loads.
Diagnostics Read(const std::string& text, const std::string& path, LockfileKind kind) {
  try {
    LoadLockfile(text, path, kind);
  } catch (const InputError& e) {
    return e.diagnostics();
  }
  return {};
}

// Whether one diagnostic is at `line` of `path` and names `key`.
bool RefusedAt(const Diagnostics& d, const std::string& path, int line, const std::string& key) {
  for (const Diagnostic& item : d.items()) {
    if (item.path == path && item.pos.line == line && item.message.find(key) != std::string::npos)
      return true;
  }
  return false;
}

std::string Listed(const Diagnostics& d) {
  std::string out;
  for (const Diagnostic& item : d.items()) out += item.Format() + "\n";
  return out;
}

TEST(ImageFields, ShellSyntaxInAnyFieldIsRefusedWhereTheManifestIsRead) {
  const std::string manifest = ReadFile(SourceDir() / "examples/tiny/trainlock.toml");
  for (const ImageField& field : ImageFields()) {
    for (const std::string& payload : kShellSyntax) {
      int line = 0;
      const std::string text = With(manifest, field.key, field.line(payload), &line);
      const Diagnostics d = Read(text, "trainlock.toml", LockfileKind::kManifest);
      EXPECT_TRUE(RefusedAt(d, "trainlock.toml", line, field.key))
          << field.key << " with " << TomlString(payload) << " (line " << line << "):\n"
          << Listed(d);
    }
  }
}

TEST(ImageFields, ShellSyntaxInAnyFieldIsRefusedWhereTheLockIsRead) {
  const std::string lock = ReadFile(SourceDir() / "examples/tiny/trainlock.lock");
  for (const ImageField& field : ImageFields()) {
    for (const std::string& payload : kShellSyntax) {
      int line = 0;
      const std::string text = With(lock, field.key, field.line(payload), &line);
      const Diagnostics d = Read(text, "trainlock.lock", LockfileKind::kLock);
      EXPECT_TRUE(RefusedAt(d, "trainlock.lock", line, field.key))
          << field.key << " with " << TomlString(payload) << " (line " << line << "):\n"
          << Listed(d);
    }
  }
}

TEST(ImageFields, TheUnplantedFieldsLoad) {
  // The control: each field with an ordinary value loads, so the refusals above are the plants'.
  const std::string manifest = ReadFile(SourceDir() / "examples/tiny/trainlock.toml");
  for (const ImageField& field : ImageFields()) {
    if (field.key == "library" || field.key == "source") continue;  // a custom op needs ops
    int line = 0;
    const std::string text = With(manifest, field.key, field.line(""), &line);
    const Diagnostics d = Read(text, "trainlock.toml", LockfileKind::kManifest);
    EXPECT_TRUE(d.empty()) << field.key << ":\n" << Listed(d);
  }
}

TEST(ImageFields, AUrlOutsideRfc3986IsRefusedAndOneWithinItIsAUrl) {
  const std::string manifest = ReadFile(SourceDir() / "examples/tiny/trainlock.toml");
  for (const char* url :
       {"http://H/ok$(touch${IFS}X)", "http://deb.example/a|b", "http://deb.example/a<b>",
        "http://deb.example/a%zz", "http:///debian", "http://user:pw@deb.example/debian"}) {
    int line = 0;
    const std::string text =
        With(manifest, "apt-archive", "apt-archive = " + TomlString(url) + "\n", &line);
    EXPECT_TRUE(RefusedAt(Read(text, "trainlock.toml", LockfileKind::kManifest), "trainlock.toml",
                          line, "apt-archive"))
        << url;
  }
  int line = 0;
  const std::string text = With(manifest, "apt-archive",
                                "apt-archive = \"http://[::1]:8080/deb;a=(b)&c*!,+~%24\"\n", &line);
  EXPECT_TRUE(Read(text, "trainlock.toml", LockfileKind::kManifest).empty());
}

TEST(ImageFields, ImageGenerateRefusesAHostileLockNamingFileLineAndColumn) {
  const testing::TempDir tmp;
  const fs::path project = tmp.path() / "tiny";
  fs::create_directories(project);
  testing::CopyExample("tiny", project);
  int line = 0;
  WriteFile(project / "trainlock.lock",
            With(ReadFile(project / "trainlock.lock"), "apt-archive",
                 "apt-archive = 'http://H/ok$(touch${IFS}X)'\n", &line));
  const testing::RunResult r = testing::RunTrainlock(
      {"image", "generate", project.string(), "--target", "cpu", "--source-date-epoch",
       "1764547200", "--build-validator", "--out", (tmp.path() / "out").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("trainlock.lock:" + std::to_string(line) + ":"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp.path() / "out/Containerfile"));
}

TEST(ImageFields, ImageGenerateRefusesShellSyntaxInItsLabelOptions) {
  const testing::TempDir tmp;
  for (const char* option_name : {"--source", "--revision"}) {
    const std::string option = option_name;
    const testing::RunResult r = testing::RunTrainlock(
        {"image", "generate", (SourceDir() / "examples/tiny").string(), "--target", "cpu",
         "--source-date-epoch", "1764547200", "--build-validator", option, "x\" $(touch X)",
         "--out", (tmp.path() / "out").string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(option), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace trainlock
