// Redacting credentials in URLs, image references and messages; see redact.h.
#include "base/redact.h"

namespace trainlock {
namespace {

constexpr std::string_view kMask = "***";

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Characters that end a word of a message: a URL or an image reference is one word.
bool EndsWord(char c) {
  return IsSpace(c) || c == '\'' || c == '"' || c == '`';
}

// The end of a URL's authority (host part) that starts at `from`.
size_t AuthorityEnd(std::string_view text, size_t from) {
  size_t at = from;
  while (at < text.size() && text[at] != '/' && text[at] != '?' && text[at] != '#' &&
         !IsSpace(text[at]))
    ++at;
  return at;
}

// Appends `word` with the userinfo of a scheme-less reference
// ("user:pw@registry/repo") masked: "user:password" before an '@' that comes before the first
// '/'. Without the ':' it is a name, not a credential: a cache directory "org-model@<commit>/".
void AppendWord(std::string_view word, std::string& out) {
  const size_t slash = word.find('/');
  const size_t at =
      slash == std::string_view::npos ? std::string_view::npos : word.rfind('@', slash);
  if (at == std::string_view::npos || at == 0 ||
      word.substr(0, at).find(':') == std::string_view::npos) {
    out += word;
    return;
  }
  out += kMask;
  out += word.substr(at);
}

}  // namespace

std::string RedactUrl(std::string_view url) {
  return RedactCredentials(url);
}

std::string RedactCredentials(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (EndsWord(text[i])) {
      out.push_back(text[i++]);
      continue;
    }
    size_t end = i;
    while (end < text.size() && !EndsWord(text[end])) ++end;
    const std::string_view word = text.substr(i, end - i);
    if (const size_t scheme = word.find("://"); scheme != std::string_view::npos) {
      // A URL: mask what precedes the last '@' of its authority. The authority ends at the
      // path, not at a quote, so that a password with quotes in it is masked whole.
      const size_t host = i + scheme + 3;
      size_t authority_end = AuthorityEnd(text, host);
      // A password with '/', '?' or '#' in it ("https://u:pa/ss@host") ends the authority
      // early by RFC 3986, but libcurl and people read it up to the '@': when what follows the
      // ':' is not a port (digits), the userinfo runs to the last '@' of the word.
      const std::string_view early = text.substr(host, authority_end - host);
      const size_t colon = early.find(':');
      if (early.find('@') == std::string_view::npos && colon != std::string_view::npos &&
          early.substr(colon + 1).find_first_not_of("0123456789") != std::string_view::npos) {
        size_t word_end = authority_end;
        while (word_end < text.size() && !IsSpace(text[word_end])) ++word_end;
        const size_t last_at = text.substr(host, word_end - host).rfind('@');
        if (last_at != std::string_view::npos) authority_end = host + last_at + 1;
      }
      const std::string_view authority = text.substr(host, authority_end - host);
      const size_t at = authority.rfind('@');
      out += text.substr(i, host - i);
      i = host;
      if (at != std::string_view::npos) {
        out += kMask;
        i = host + at;
      }
      // The rest of the URL as it is, to the end of its word.
      size_t stop = i;
      while (stop < text.size() && !EndsWord(text[stop])) ++stop;
      out += text.substr(i, stop - i);
      i = stop;
      continue;
    }
    AppendWord(word, out);
    i = end;
  }
  return out;
}

}  // namespace trainlock
