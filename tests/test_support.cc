// Test helpers; see test_support.h.
#include "test_support.h"

#include "base/rank_env.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "base/program_path.h"
#include "base/subprocess.h"
#include "lock/http_client.h"

namespace trainlock::testing {

std::filesystem::path SourceDir() {
  return TRAINLOCK_SOURCE_DIR;
}
std::filesystem::path BinDir() {
  return TRAINLOCK_BIN_DIR;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "trainlock-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::filesystem::path CopyExample(const std::string& name, const std::filesystem::path& dest) {
  std::filesystem::copy(
      SourceDir() / "examples" / name, dest,
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
  return dest;
}

RunResult RunProgram(const std::string& program, const std::vector<std::string>& args,
                     const std::vector<std::string>& env) {
  std::vector<std::string> argv = {(BinDir() / program).string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, env);
}

RunResult RunCommand(const std::vector<std::string>& command, const std::vector<std::string>& env) {
  TempDir capture;
  std::string out_path = (capture.path() / "out").string();
  std::string err_path = (capture.path() / "err").string();
  const std::string& binary = command.at(0);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int in = ::open("/dev/null", O_RDONLY);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::dup2(in, 0);
    for (const std::string& kv : env) ::putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> argv;
    for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(binary.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  RunResult result;
  result.exit_code = ExitCodeOf(status);
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  return result;
}

namespace {

// Removes the line starting with `prefix` (and with `table`, the lines up to the next blank).
void EraseLines(std::string& text, const std::string& prefix, bool table) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return;
  const size_t end = table ? text.find("\n\n", at) : text.find('\n', at);
  text.erase(at, end == std::string::npos ? std::string::npos : end + 1 - at);
}

}  // namespace

std::filesystem::path UnlockedTiny(const std::filesystem::path& dest, const std::string& base,
                                   const std::string& extra, const std::string& python_index) {
  std::filesystem::create_directories(dest);
  CopyExample("tiny", dest);
  std::filesystem::remove(dest / "trainlock.lock");
  std::string manifest = ReadFile(dest / "trainlock.toml");
  const size_t at = manifest.find("base = \"");
  const size_t end = manifest.find('\n', at);
  if (base.empty()) {
    manifest.erase(at, end + 1 - at);
  } else {
    manifest.replace(at, end - at, "base = \"" + base + "\"");
  }
  if (python_index.empty()) {
    EraseLines(manifest, "python-index = ", false);
    EraseLines(manifest, "[python]", true);
  } else {
    const size_t index = manifest.find("python-index = ");
    manifest.replace(index, manifest.find('\n', index) - index,
                     "python-index = [\"" + python_index + "\"]");
  }
  WriteFile(dest / "trainlock.toml", extra.empty() ? manifest : manifest + "\n" + extra);
  return dest;
}

bool HaveProgram(const std::string& program) {
  return OnPath(program);
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& command,
                                     const std::filesystem::path& log) {
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int in = ::open("/dev/null", O_RDONLY);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::dup2(in, 0);
    std::vector<char*> argv;
    for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

bool ProcessIsGone(int pid) {
  for (int i = 0; i < 100; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z')
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

int PidFrom(const std::filesystem::path& file) {
  return std::stoi(ReadFile(file));
}

int FreeLoopbackPort() {
  return trainlock::FreeLoopbackPort();
}

bool WaitForHttp(const std::string& url, int seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      HttpRequest request;
      request.url = url;
      request.timeout_s = 2;
      HttpFetch(request);
      return true;
    } catch (const HttpError&) {
      // not listening yet
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::filesystem::path TinyWith(const std::filesystem::path& dir, const std::string& extra,
                               const std::string& validate_extra,
                               const std::optional<std::string>& lock_extra) {
  std::filesystem::path project = dir / "tiny";
  std::filesystem::create_directories(project);
  CopyExample("tiny", project);
  for (const char* file : {"trainlock.toml", "trainlock.lock"}) {
    std::string text = ReadFile(project / file);
    const size_t table = text.find("[validate]\n");
    EXPECT_NE(table, std::string::npos) << file;
    text.insert(table + 11, validate_extra);
    const bool lock = std::string(file) == "trainlock.lock";
    WriteFile(project / file, text + (lock && lock_extra ? *lock_extra : extra));
  }
  auto hash = RunProgram("trainlock", {"hash", project.string(), "--manifest"});
  EXPECT_EQ(hash.exit_code, 0) << hash.err;
  std::string lock = ReadFile(project / "trainlock.lock");
  // Past the opening quote: `trainlock lock` writes a literal string ('...'), a hand a basic one.
  const size_t key = lock.find("manifest-sha256 = ");
  EXPECT_NE(key, std::string::npos);
  const size_t at = key + 19;
  lock.replace(at, 64, hash.out.substr(0, 64));
  WriteFile(project / "trainlock.lock", lock);
  return project;
}

}  // namespace trainlock::testing
