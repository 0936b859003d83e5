// Recording and verifying the image Python's loadable files; see python_files.h.
#include "checks/python_files.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

#include "base/catalog_embedded.h"
#include "base/exit_code.h"
#include "base/failure.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "base/scratch_dir.h"
#include "base/sha256.h"
#include "base/subprocess.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxPythonFiles = 1'000'000;  // a CUDA torch venv holds about 40 000
constexpr int kMaxTreeDepth = 64;
constexpr int kMaxLandmarkLevels = 8;

std::string ErrnoText(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

bool PastDeadline(Deadline deadline) {
  return std::chrono::steady_clock::now() > deadline;
}

// The walk of one set of trees: every entry once, files hashed at the end on several threads.
class PythonTreeWalk {
 public:
  explicit PythonTreeWalk(Deadline deadline) : deadline_(deadline) {}

  // A start-up file or a directory of sys.path: recorded as absent when it does not exist.
  void Add(const fs::path& path) { Visit(path, 0, /*top=*/true); }

  // Hashes what must be hashed; the entries sorted by path. Problems (unreadable, caps) go to
  // `errors` as "<path>: why".
  std::vector<PythonFile> Finish(std::vector<std::string>& errors) {
    HashAll();
    errors.insert(errors.end(), errors_.begin(), errors_.end());
    std::vector<PythonFile> out;
    out.reserve(files_.size());
    for (auto& [path, file] : files_) out.push_back(std::move(file));
    return out;
  }

 private:
  void Visit(const fs::path& path, int depth, bool top) {
    if (files_.size() >= kMaxPythonFiles || PastDeadline(deadline_)) {
      if (!stopped_) errors_.push_back(path.string() + ": " + StopReason());
      stopped_ = true;
      return;
    }
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) {
        if (top) Put(path, PythonFile::Kind::kAbsent);
        return;
      }
      return errors_.push_back(ErrnoText(path.string()));
    }
    if (S_ISLNK(st.st_mode)) return Link(path, depth);
    if (S_ISDIR(st.st_mode)) return Directory(path, depth);
    if (S_ISREG(st.st_mode)) {
      PythonFile& f = Put(path, PythonFile::Kind::kFile);
      f.mode = st.st_mode & 07777;
      return;
    }
    Put(path, PythonFile::Kind::kOther);
  }

  void Link(const fs::path& path, int depth) {
    std::error_code ec;
    const fs::path text = fs::read_symlink(path, ec);
    if (ec) return errors_.push_back(path.string() + ": " + ec.message());
    PythonFile& f = Put(path, PythonFile::Kind::kLink);
    f.link = text.string();
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return;  // a dangling link: its text is what counts
    if (S_ISDIR(st.st_mode)) return Directory(path, depth);
    if (S_ISREG(st.st_mode)) f.sha256 = "?";  // hashed through the link in HashAll
  }

  void Directory(const fs::path& path, int depth) {
    if (path.filename() == "__pycache__") return;  // never read: the engine's pycache prefix
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return errors_.push_back(ErrnoText(path.string()));
    if (!seen_dirs_.insert({st.st_dev, st.st_ino}).second) return;  // each directory once
    if (depth >= kMaxTreeDepth)
      return errors_.push_back(path.string() + ": nested deeper than " +
                               std::to_string(kMaxTreeDepth) + " directories");
    std::vector<std::string> names;
    if (DIR* dir = ::opendir(path.c_str())) {
      while (const dirent* e = ::readdir(dir)) {
        const std::string name = e->d_name;
        if (name != "." && name != "..") names.push_back(name);
        if (names.size() > kMaxPythonFiles) break;
      }
      ::closedir(dir);
    } else {
      return errors_.push_back(ErrnoText(path.string()));
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) Visit(path / name, depth + 1, /*top=*/false);
  }

  PythonFile& Put(const fs::path& path, PythonFile::Kind kind) {
    PythonFile& f = files_[path.string()];
    f.path = path.string();
    f.kind = kind;
    if (kind == PythonFile::Kind::kFile) f.sha256 = "?";
    return f;
  }

  std::string StopReason() const {
    return PastDeadline(deadline_) ? "not walked within the time limit"
                                   : "more than " + std::to_string(kMaxPythonFiles) + " entries";
  }

  // Every file marked "?" hashed, on up to 8 threads (a CUDA torch is several GB).
  void HashAll() {
    std::vector<PythonFile*> pending;
    for (auto& [path, f] : files_)
      if (f.sha256 == "?") pending.push_back(&f);
    std::atomic<size_t> next{0};
    std::vector<std::string> errors(pending.size());
    auto work = [&] {
      for (size_t i; (i = next++) < pending.size();) {
        PythonFile& f = *pending[i];
        if (PastDeadline(deadline_)) {
          errors[i] = f.path + ": not hashed within the time limit";
          continue;
        }
        try {
          uint64_t size = 0;
          f.sha256 = Sha256FileHex(f.path, &size);
          f.size = static_cast<int64_t>(size);
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      }
    };
    const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
    for (size_t i = 0; i < pending.size(); ++i) {
      if (errors[i].empty()) continue;
      pending[i]->sha256.clear();
      errors_.push_back(errors[i]);
    }
  }

  Deadline deadline_;
  std::map<std::string, PythonFile> files_;
  std::set<std::pair<dev_t, ino_t>> seen_dirs_;
  std::vector<std::string> errors_;
  bool stopped_ = false;
};

// "python3.11" from the standard library's directory on the path ("/usr/lib/python3.11"); ""
// when the path names none.
std::string StdlibName(const std::vector<std::string>& sys_path) {
  for (const std::string& p : sys_path) {
    const std::string name = fs::path(p).filename().string();
    if (name.starts_with("python3.") && fs::path(p).parent_path().filename() == "lib") return name;
  }
  return "";
}

// The files the interpreter reads or looks for at start-up, before any sys.path of ours: the
// executable, pyvenv.cfg beside it or one level up, ._pth files beside it, the build-tree
// markers, and getpath's prefix landmarks in each directory above the real executable (one
// planted there would move the standard library before isolated.py sets the path).
std::vector<fs::path> StartupFiles(const std::string& interpreter,
                                   const std::vector<std::string>& sys_path) {
  const fs::path exe(interpreter);
  std::vector<fs::path> out = {exe, exe.parent_path() / "pyvenv.cfg",
                               exe.parent_path().parent_path() / "pyvenv.cfg"};
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(exe, ec);
  for (const fs::path& e : {exe, real}) {
    const std::string name = e.filename().string();
    out.push_back(e.parent_path() / (name + "._pth"));
    out.push_back(e.parent_path() / (name.substr(0, name.rfind('.')) + "._pth"));
  }
  out.push_back(real.parent_path() / "pybuilddir.txt");
  out.push_back(real.parent_path() / "Modules" / "Setup.local");
  const std::string stdlib = StdlibName(sys_path);
  if (stdlib.empty()) return out;
  const std::string zip = "python3" + stdlib.substr(std::string("python3.").size()) + ".zip";
  fs::path dir = real.parent_path();
  for (int level = 0; level < kMaxLandmarkLevels && !dir.empty(); ++level) {
    for (const fs::path& landmark :
         {dir / "lib" / stdlib / "os.py", dir / "lib" / stdlib / "lib-dynload", dir / "lib" / zip})
      out.push_back(landmark);
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return out;
}

std::vector<PythonFile> Walk(const std::string& interpreter,
                             const std::vector<std::string>& sys_path, Deadline deadline,
                             std::vector<std::string>& errors) {
  PythonTreeWalk walk(deadline);
  for (const fs::path& p : StartupFiles(interpreter, sys_path)) walk.Add(p);
  for (const std::string& p : sys_path) walk.Add(p);
  return walk.Finish(errors);
}

// Each kind of entry once: its key in the record and its words in a finding.
struct KindSpelling {
  PythonFile::Kind kind;
  const char* key;
  const char* words;
};
constexpr KindSpelling kKindSpellings[] = {
    {PythonFile::Kind::kFile, "file", "a file"},
    {PythonFile::Kind::kLink, "link", "a link"},
    {PythonFile::Kind::kAbsent, "absent", "absent"},
    {PythonFile::Kind::kOther, "other", "not a file, link or directory"},
};

const KindSpelling& SpellingOf(PythonFile::Kind kind) {
  for (const KindSpelling& k : kKindSpellings)
    if (k.kind == kind) return k;
  return kKindSpellings[3];
}

const char* KindName(PythonFile::Kind kind) {
  return SpellingOf(kind).words;
}
const char* KindKey(PythonFile::Kind kind) {
  return SpellingOf(kind).key;
}

std::string ModeText(uint32_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", mode & 07777);
  return text;
}

// Why `now` is not `then` (same path); "" when it is the recorded entry.
std::string Difference(const PythonFile& then, const PythonFile& now) {
  if (then.kind != now.kind)
    return std::string(KindName(now.kind)) + ", recorded as " + KindName(then.kind);
  if (then.kind == PythonFile::Kind::kLink && then.link != now.link)
    return "links to '" + now.link + "', recorded '" + then.link + "'";
  if (then.sha256 != now.sha256)
    return "sha256 " + now.sha256.substr(0, 12) + "..., recorded " + then.sha256.substr(0, 12) +
           "...";
  if (then.size != now.size)
    return std::to_string(now.size) + " bytes, recorded " + std::to_string(then.size);
  if (then.mode != now.mode)
    return "mode " + ModeText(now.mode) + ", recorded " + ModeText(then.mode);
  return "";
}

// A `.pyc` outside `__pycache__`: Python imports it as a module without any source.
bool IsSourcelessBytecode(const std::string& path) {
  const fs::path p(path);
  return p.extension() == ".pyc" && p.parent_path().filename() != "__pycache__";
}

void CompareOne(const PythonFile* then, const PythonFile* now, PythonFilesDiff& diff) {
  if (now && now->kind != PythonFile::Kind::kAbsent) {
    if (IsSourcelessBytecode(now->path))
      return diff.refused.push_back(now->path + ": sourceless bytecode (Python imports it)");
    if (now->kind == PythonFile::Kind::kOther)
      return diff.refused.push_back(now->path + ": not a file, link or directory");
  }
  if (!then || then->kind == PythonFile::Kind::kAbsent) {
    if (now && now->kind != PythonFile::Kind::kAbsent) diff.added.push_back(now->path);
    return;
  }
  if (!now || now->kind == PythonFile::Kind::kAbsent) return diff.missing.push_back(then->path);
  if (const std::string why = Difference(*then, *now); !why.empty())
    return diff.changed.push_back(now->path + ": " + why);
  if (now->kind == PythonFile::Kind::kFile) {
    ++diff.files_verified;
    diff.bytes_verified += now->size;
  }
}

[[noreturn]] void Malformed(const fs::path& file, const std::string& why) {
  throw Failure(file.string() + ": " + why, kExitVerdict);  // the image is not as built
}

// A member of entry `e` as a string ("" when absent); anything else is malformed.
std::string TextMember(const nlohmann::json& e, const char* key, const fs::path& file,
                       const std::string& where) {
  if (!e.contains(key)) return "";
  if (!e[key].is_string()) Malformed(file, where + ": " + key + " is not a string");
  return e[key].get<std::string>();
}

PythonFile ReadEntry(const nlohmann::json& e, const fs::path& file, size_t index) {
  const std::string where = "files[" + std::to_string(index) + "]";
  if (!e.is_object()) Malformed(file, where + " is not an object");
  PythonFile f;
  f.path = TextMember(e, "path", file, where);
  const std::string kind = TextMember(e, "kind", file, where);
  if (f.path.empty() || f.path[0] != '/') Malformed(file, where + ": the path is not absolute");
  const KindSpelling* spelling = nullptr;
  for (const KindSpelling& k : kKindSpellings)
    if (kind == k.key) spelling = &k;
  if (!spelling)
    Malformed(file, where + ": kind '" + kind + "' is not file, link, absent or other");
  f.kind = spelling->kind;
  if (f.kind == PythonFile::Kind::kAbsent || f.kind == PythonFile::Kind::kOther) return f;
  f.sha256 = TextMember(e, "sha256", file, where);
  f.link = TextMember(e, "link", file, where);
  if (e.contains("size")) {
    if (!e["size"].is_number_unsigned()) Malformed(file, where + ": size is not a count");
    f.size = static_cast<int64_t>(std::min<uint64_t>(e["size"].get<uint64_t>(), INT64_MAX));
  }
  const std::string mode = TextMember(e, "file_mode", file, where);
  if (mode.size() > 6 || mode.find_first_not_of("01234567") != std::string::npos)
    Malformed(file, where + ": file_mode '" + mode + "' is not octal");
  f.mode = static_cast<uint32_t>(std::strtoul(mode.c_str(), nullptr, 8)) & 07777;
  if ((f.kind == PythonFile::Kind::kFile || !f.sha256.empty()) && !IsSha256Hex(f.sha256))
    Malformed(file, where + ": sha256 is not 64 hex digits");
  return f;
}

std::vector<std::string> StringList(const nlohmann::json& j, const char* key,
                                    const fs::path& file) {
  if (!j.contains(key) || !j[key].is_array()) Malformed(file, std::string(key) + " is not a list");
  std::vector<std::string> out;
  for (const nlohmann::json& s : j[key]) {
    if (!s.is_string() || s.get<std::string>().empty() || s.get<std::string>()[0] != '/')
      Malformed(file, std::string(key) + " holds something other than an absolute path");
    out.push_back(s.get<std::string>());
  }
  return out;
}

// isolated.py's answer to --print-sys-path: one JSON list of absolute directories.
std::vector<std::string> AskSysPath(const fs::path& python, Deadline deadline) {
  ScratchDir scratch("trainlock-python-files");
  if (scratch.path().empty())
    throw Failure("no temporary directory for isolated.py", kExitEnvironment);
  fs::path script;
  for (const EmbeddedFile& f : EmbeddedPythonEngineFiles()) {
    if (std::string_view(f.name) != "trainlock_engine/isolated.py") continue;
    script = scratch.path() / "isolated.py";
    WriteFileAtomically(script, std::string(f.contents));
  }
  if (script.empty())
    throw Failure("this binary carries no trainlock_engine/isolated.py", kExitEnvironment);
  SpawnOptions spawn;
  spawn.argv = {python.string(), "-I", "-S", "-B", script.string(), "--print-sys-path"};
  spawn.program = python.string();
  spawn.clean_env = true;
  spawn.null_stdin = true;
  RunLimits limits;
  limits.timeout_s = std::max(
      1.0, std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count());
  const ProcessRun run = RunProcess(spawn, limits);
  if (!run.started || run.timed_out || run.exit_code != 0)
    throw Failure(python.string() + " could not say its sys.path (" +
                      (run.started ? "exit " + std::to_string(run.exit_code) : run.start_error) +
                      "): " + run.output,
                  kExitEnvironment);
  const std::string last =
      run.output.substr(run.output.rfind('[') == std::string::npos ? 0 : run.output.rfind('['));
  std::string problem;
  std::optional<nlohmann::json> j = TryParseJsonText(last, &problem);
  if (!j || !j->is_array())
    throw Failure(python.string() + ": no sys.path in " + last, kExitEnvironment);
  nlohmann::json wrapped = {{"sys_path", *j}};
  return StringList(wrapped, "sys_path", python);
}

}  // namespace

std::vector<PythonFile> WalkPythonFiles(const std::string& interpreter,
                                        const std::vector<std::string>& sys_path,
                                        Deadline deadline) {
  std::vector<std::string> errors;
  std::vector<PythonFile> files = Walk(interpreter, sys_path, deadline, errors);
  if (!errors.empty()) throw Failure(errors.front(), kExitEnvironment);
  return files;
}

PythonFiles RecordPythonFiles(const fs::path& python, Deadline deadline) {
  PythonFiles record;
  record.interpreter = python.string();
  for (const std::string& dir : AskSysPath(python, deadline)) {
    std::error_code ec;
    const std::string real = fs::weakly_canonical(dir, ec).string();
    const std::string entry = ec ? dir : real;
    if (std::find(record.sys_path.begin(), record.sys_path.end(), entry) == record.sys_path.end())
      record.sys_path.push_back(entry);
  }
  record.files = WalkPythonFiles(record.interpreter, record.sys_path, deadline);
  return record;
}

PythonFilesDiff ComparePythonFiles(const std::vector<PythonFile>& recorded,
                                   const std::vector<PythonFile>& found) {
  PythonFilesDiff diff;
  size_t i = 0, j = 0;
  while (i < recorded.size() || j < found.size()) {
    const bool take_recorded =
        j == found.size() || (i < recorded.size() && recorded[i].path < found[j].path);
    const bool take_found =
        i == recorded.size() || (j < found.size() && found[j].path < recorded[i].path);
    if (take_recorded) {
      CompareOne(&recorded[i++], nullptr, diff);
    } else if (take_found) {
      CompareOne(nullptr, &found[j++], diff);
    } else {
      CompareOne(&recorded[i++], &found[j++], diff);
    }
  }
  return diff;
}

PythonFilesDiff VerifyPythonFiles(const PythonFiles& record, Deadline deadline) {
  std::vector<std::string> errors;
  const std::vector<PythonFile> found = Walk(record.interpreter, record.sys_path, deadline, errors);
  PythonFilesDiff diff = ComparePythonFiles(record.files, found);
  for (const std::string& e : errors) diff.refused.push_back(e);
  return diff;
}

std::string PythonFilesJson(const PythonFiles& record) {
  nlohmann::json files = nlohmann::json::array();
  for (const PythonFile& f : record.files) {
    nlohmann::json e = {{"path", f.path}, {"kind", KindKey(f.kind)}};
    if (!f.sha256.empty()) e["sha256"] = f.sha256, e["size"] = f.size;
    if (f.kind == PythonFile::Kind::kFile) e["file_mode"] = ModeText(f.mode);
    if (f.kind == PythonFile::Kind::kLink) e["link"] = f.link;
    files.push_back(std::move(e));
  }
  const nlohmann::json j = {{"schema", kPythonFilesSchema},
                            {"interpreter", record.interpreter},
                            {"sys_path", record.sys_path},
                            {"files", std::move(files)}};
  return j.dump(1) + "\n";
}

PythonFiles ReadPythonFiles(const fs::path& file) {
  std::string problem;
  const std::optional<nlohmann::json> j = TryReadJsonFile(file, &problem);
  if (!j) Malformed(file, problem);
  if (!j->is_object() || TextMember(*j, "schema", file, "the record") != kPythonFilesSchema)
    Malformed(file, std::string("not a ") + kPythonFilesSchema + " record");
  PythonFiles record;
  record.interpreter = TextMember(*j, "interpreter", file, "the record");
  if (record.interpreter.empty() || record.interpreter[0] != '/')
    Malformed(file, "the interpreter is not an absolute path");
  record.sys_path = StringList(*j, "sys_path", file);
  if (!j->contains("files") || !(*j)["files"].is_array() || (*j)["files"].size() > kMaxPythonFiles)
    Malformed(file, "files is not a list of at most " + std::to_string(kMaxPythonFiles));
  const nlohmann::json& files = (*j)["files"];
  for (size_t i = 0; i < files.size(); ++i) {
    record.files.push_back(ReadEntry(files[i], file, i));
    if (i > 0 && !(record.files[i - 1].path < record.files[i].path))
      Malformed(file, "files[" + std::to_string(i) + "] is out of order or repeated");
  }
  return record;
}

std::vector<fs::path> SiteDirectoriesOf(const std::vector<std::string>& sys_path) {
  std::vector<fs::path> out;
  for (const std::string& p : sys_path) {
    const std::string name = fs::path(p).filename().string();
    if (name == "site-packages" || name == "dist-packages") out.emplace_back(p);
  }
  return out;
}

}  // namespace trainlock
