// Project-relative path rules; see project_path.h.
#include "project/project_path.h"

#include <cctype>

#include "base/diagnostic.h"

namespace trainlock {

std::string RelativePathProblem(std::string_view path) {
  if (path.empty()) return "empty path";
  if (path.front() == '/' || path.front() == '~') {
    return "absolute path " + Quoted(path) + " escapes the project";
  }
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f) return "path " + Quoted(path) + " contains a control character";
    if (c == '\\') return "path " + Quoted(path) + " contains a backslash; use '/'";
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    std::string_view component = path.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (component == "..") return "path " + Quoted(path) + " escapes the project through '..'";
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return {};
}

std::string ImagePathProblem(std::string_view path) {
  for (unsigned char c : path) {
    if (!std::isalnum(c) &&
        std::string_view("._+-/").find(static_cast<char>(c)) == std::string_view::npos) {
      return "path " + Quoted(path) +
             " is copied into the image and may hold only letters, digits and . _ + - /";
    }
  }
  return {};
}

}  // namespace trainlock
