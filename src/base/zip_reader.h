// Reading one member of a ZIP archive on disk (a Python wheel is one): the central directory,
// then the member's stored or deflated bytes through zlib, with a cap on what is inflated.
// ZIP64 archives (members or archives over 4 GiB) are not read.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace trainlock {

// The members' names in central-directory order. Throws std::runtime_error naming the file
// when it is not a ZIP archive this reader understands.
std::vector<std::string> ZipMemberNames(const std::filesystem::path& zip);

// The bytes of member `name`. Throws std::runtime_error when it is missing, compressed with a
// method other than stored or deflate, corrupt, or larger than `max_bytes` once inflated.
std::string ReadZipMember(const std::filesystem::path& zip, const std::string& name,
                          size_t max_bytes);

}  // namespace trainlock
