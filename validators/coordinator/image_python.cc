// Verifying the image's Python before any of it runs; see image_python.h.
#include "coordinator/image_python.h"

#include <iostream>
#include <system_error>

#include "base/exit_code.h"
#include "base/file_io.h"
#include "base/terminal_text.h"

#include "coordinator/engine_command.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

// Whether --python names the recorded interpreter by its path (a name is looked up on PATH
// as the engine would be). Another path to the same binary is another interpreter: Python
// finds its venv and standard library from the path it was started by.
bool SameInterpreter(const std::string& requested, const std::string& recorded) {
  if (requested.empty()) return true;
  try {
    return fs::absolute(EnginePython(requested)).lexically_normal() ==
           fs::path(recorded).lexically_normal();
  } catch (const std::exception&) {
    return false;  // none such: not the image's either
  }
}

}  // namespace

ImagePythonFiles VerifyImagePython(bool in_image, const fs::path& record,
                                   const std::string& requested_python, Deadline deadline) {
  ImagePythonFiles out;
  out.in_image = in_image;
  if (!in_image) return out;
  out.record = record.string();
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(record, ec))) {
    out.problem = record.string() +
                  " is missing: the image records no files of its Python (built by an older "
                  "trainlock, or changed after the build)";
    return out;
  }
  PythonFiles files;
  try {
    files = ReadPythonFiles(record);
  } catch (const std::exception& e) {
    out.problem = e.what();
    return out;
  }
  out.interpreter = files.interpreter;
  out.sys_path = files.sys_path;
  if (!SameInterpreter(requested_python, files.interpreter)) {
    out.problem = "--python " + requested_python + " is not the image's interpreter " +
                  files.interpreter + " (" + record.string() + ")";
    return out;
  }
  out.diff = VerifyPythonFiles(files, deadline);
  out.walked = true;
  return out;
}

int RecordImagePython(const fs::path& python, const fs::path& out) {
  PythonFiles record;
  try {
    record = RecordPythonFiles(python, std::chrono::steady_clock::now() + std::chrono::minutes(30));
  } catch (const std::exception& e) {
    // It may name files of the image's Python path: shown through the terminal-safe printer.
    std::cerr << "trainlock-validate record-python-files: error: " << TerminalText(e.what())
              << "\n";
    return kExitEnvironment;
  }
  WriteFileAtomically(out, PythonFilesJson(record));
  int64_t bytes = 0;
  for (const PythonFile& f : record.files) bytes += f.size;
  std::cout << "recorded " << record.files.size() << " entries (" << (bytes >> 20) << " MiB) of "
            << python.string() << "'s path (" << record.sys_path.size() << " directories) in "
            << out.string() << "\n";
  return kExitOk;
}

}  // namespace trainlock::validate
