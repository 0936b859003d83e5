// Every file the image's Python can load, recorded when the image is built and verified by
// the validator before any Python starts (docs/validate.md, "The image's Python files").
//
// What a Python engine can load is its interpreter (and the files it reads at start-up:
// pyvenv.cfg, ._pth files beside the executable) and whatever lies under the directories of
// its sys.path: the standard library (python3XY.zip, lib/python3.X, lib-dynload), the venv's
// site-packages and, when pyvenv.cfg includes them, the base's site directories (.pth files,
// extension modules and the libraries they bundle, torch's among them). The build records
// them all (RecordPythonFiles: sha256, size and mode of each file, the text of each link, and
// each directory of the path that does not exist) into /etc/trainlock/python-files.json, so the
// image digest covers the record; the validator walks the same trees itself (C++, no
// interpreter asked) and names each file added, changed or missing (VerifyPythonFiles). The
// engine then runs exactly that interpreter with exactly that sys.path and reads its bytecode
// only from a private cache in its work directory (`-X pycache_prefix`), never from a
// `__pycache__` of the tree: those directories are neither recorded nor read. A `.pyc` outside
// `__pycache__` (sourceless bytecode, which Python imports as a module) is refused wherever it
// is. Bounded: entries, depth, bytes and time; links are recorded, and a link to a directory
// is walked like the directory (each directory once).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/file_stream.h"

namespace trainlock {

inline constexpr const char* kPythonFilesSchema = "trainlock.python-files/v1";

// One path of the record: a regular file (sha256, size, mode), a link (its text, and the
// sha256 and size of the file it leads to when it leads to one), a path that does not exist
// (a directory of sys.path the interpreter would search if it appeared) or anything else (a
// FIFO, a socket, a device: refused).
struct PythonFile {
  enum class Kind { kFile, kLink, kAbsent, kOther };
  std::string path;  // absolute, as Python reaches it
  Kind kind = Kind::kFile;
  std::string sha256;  // kFile, and a kLink to a file; "" otherwise
  int64_t size = 0;
  uint32_t mode = 0;  // permission bits of a kFile
  std::string link;   // kLink: readlink's text
};

struct PythonFiles {
  std::string interpreter;            // the executable the engine runs, as given
  std::vector<std::string> sys_path;  // the engine's sys.path after its own package, in order
  std::vector<PythonFile> files;      // sorted by path, each once
};

// The interpreter's start-up files and the sys.path trees, walked and hashed within
// `deadline`: `interpreter` and the path as recorded. Throws Failure (exit 3) naming the
// path when a cap is passed or the deadline is reached.
std::vector<PythonFile> WalkPythonFiles(const std::string& interpreter,
                                        const std::vector<std::string>& sys_path,
                                        Deadline deadline);

// At image build: asks `python` (isolated, `-I -S`) for the sys.path the engine would run
// with (trainlock_engine/isolated.py's own answer, from the copy compiled into this binary),
// resolves each directory's links, and walks it all. Throws Failure (exit 3) saying why
// when the interpreter cannot answer.
PythonFiles RecordPythonFiles(const std::filesystem::path& python, Deadline deadline);

// What the walk of today found against the record.
struct PythonFilesDiff {
  std::vector<std::string> added;    // "<path>": on the path now, not recorded
  std::vector<std::string> changed;  // "<path>: why" (sha256, size, mode, link, kind)
  std::vector<std::string> missing;  // "<path>": recorded, gone
  std::vector<std::string> refused;  // "<path>: why" (sourceless bytecode, a FIFO, unreadable)
  int64_t files_verified = 0;        // recorded files found with their sha256, size and mode
  int64_t bytes_verified = 0;
  int64_t problems() const {
    return static_cast<int64_t>(added.size() + changed.size() + missing.size() + refused.size());
  }
};

// Compares `found` (a walk of today) with `recorded`; both sorted by path.
PythonFilesDiff ComparePythonFiles(const std::vector<PythonFile>& recorded,
                                   const std::vector<PythonFile>& found);

// Walks `record`'s trees now and compares them with it; an unreadable tree or a cap is one
// refused entry naming it, never a pass.
PythonFilesDiff VerifyPythonFiles(const PythonFiles& record, Deadline deadline);

// What the validator found of the image's Python before any of it ran
// (validators/coordinator/image_python.h): env.packages judges it.
struct ImagePythonFiles {
  bool in_image = false;              // inside an image built by trainlock
  std::string record;                 // the record's path (inside an image)
  std::string interpreter;            // the recorded interpreter
  std::vector<std::string> sys_path;  // the recorded path
  bool walked = false;                // the trees were walked against the record
  PythonFilesDiff diff;
  std::string problem;  // no record, an unreadable one, or --python other than the recorded
  // Whether a Python engine may start: outside an image, or inside one with nothing found.
  bool MayRunPython() const { return problem.empty() && diff.problems() == 0; }
};

// The record's file format (`trainlock.python-files/v1`, sorted, no times: a rebuild writes the
// same bytes). Read bounded: a malformed, oversized or hostile record is a Failure (exit 1)
// naming the file and what is wrong.
std::string PythonFilesJson(const PythonFiles& record);
PythonFiles ReadPythonFiles(const std::filesystem::path& file);

// The directories of `sys_path` that hold installed distributions (site-packages,
// dist-packages): what env.packages' RECORD check reads.
std::vector<std::filesystem::path> SiteDirectoriesOf(const std::vector<std::string>& sys_path);

}  // namespace trainlock
