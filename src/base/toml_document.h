// Parsing TOML text into a toml++ table, with parse errors turned into one-line diagnostics.
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>

namespace trainlock {

// Throws InputError ("path:line:column: error: ...") when `text` is not valid TOML.
toml::table ParseTomlDocument(std::string_view text, const std::string& path);

}  // namespace trainlock
