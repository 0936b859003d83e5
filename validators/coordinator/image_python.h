// The image's Python, verified before any Python starts: inside an image built by trainlock
// (ImageBinding.in_image), the record of every file its Python can load
// (/etc/trainlock/python-files.json, checks/python_files.h) is read and the trees walked and
// hashed by this process, and the interpreter a Python engine is asked to run under
// (--python) must be the recorded one. What it finds is env.packages' to judge; a Python
// engine, and the probe of its interpreter, run only when nothing was found, with exactly the
// recorded interpreter and sys.path. Outside an image nothing is verified and the report says
// the engine's interpreter is unverified.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "checks/python_files.h"

namespace trainlock::validate {

// `in_image`: ImageBinding.in_image. `record` the record's path (kPythonFilesInImage);
// `requested_python` --python ("" = the image's). Walks within `deadline`.
ImagePythonFiles VerifyImagePython(bool in_image, const std::filesystem::path& record,
                                   const std::string& requested_python, Deadline deadline);

// `trainlock-validate record-python-files`, a step of the image build: records every file
// `python` can load (checks/python_files.h) into `out`, and says how many in one line. Exit 0;
// 3 with one line saying why when the interpreter cannot answer or a tree cannot be read.
int RecordImagePython(const std::filesystem::path& python, const std::filesystem::path& out);

}  // namespace trainlock::validate
