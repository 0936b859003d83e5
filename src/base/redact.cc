// Redacting credentials in URLs, image references and messages; see redact.h.
#include "base/redact.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <vector>

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

// Whether an environment variable's name says its value is a secret (HF_TOKEN,
// AWS_SECRET_ACCESS_KEY, TRAINLOCK_REGISTRY_PASSWORD, ...).
bool SecretName(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* word : {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY",
                           "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL"})
    if (upper.find(word) != std::string::npos) return true;
  return false;
}

// The values of this process's secret-looking environment variables, longest first (so that
// one value inside another is masked whole). Short values ("1", "yes") are not secrets and
// would mask ordinary words.
std::vector<std::string> SecretEnvironmentValues() {
  std::vector<std::string> values;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const size_t eq = text.find('=');
    if (eq == std::string_view::npos || text.size() - eq - 1 < 8) continue;
    if (SecretName(text.substr(0, eq))) values.emplace_back(text.substr(eq + 1));
  }
  std::sort(values.begin(), values.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return values;
}

void ReplaceAll(std::string& text, std::string_view what) {
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at)) {
    text.replace(at, what.size(), kMask);
    at += kMask.size();
  }
}

// A character of a bearer token or base64 credential (RFC 6750's b64token), or of a Hugging
// Face token (letters and digits only).
bool TokenChar(char c, bool alnum_only) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return !alnum_only &&
         (c == '-' || c == '_' || c == '.' || c == '~' || c == '+' || c == '/' || c == '=');
}

// Masks the token after each `marker`: at least `min` token characters.
void MaskAfter(std::string& text, std::string_view marker, size_t min, bool alnum_only = false) {
  for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at)) {
    const size_t from = at + marker.size();
    size_t end = from;
    while (end < text.size() && TokenChar(text[end], alnum_only)) ++end;
    if (end - from >= min && text.compare(from, kMask.size(), kMask) != 0) {
      text.replace(from, end - from, kMask);
      end = from + kMask.size();
    }
    at = end;
  }
}

// Secrets a program may print (a smoke command's output, an HTTP library echoing its request):
// the values of this process's secret-looking environment variables, bearer and basic
// credentials, and Hugging Face tokens.
void MaskPrintedSecrets(std::string& text) {
  for (const std::string& value : SecretEnvironmentValues()) ReplaceAll(text, value);
  MaskAfter(text, "Bearer ", 8);
  MaskAfter(text, "Authorization: Basic ", 8);
  MaskAfter(text, "authorization: Basic ", 8);
  MaskAfter(text, "hf_", 30, /*alnum_only=*/true);  // "hf_" + 34 letters and digits
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
      const bool at_in_early = early.find('@') != std::string_view::npos;
      // A password with a space in it (invalid, refused, and quoted back by the refusal) ends
      // the authority at the space: then the userinfo runs across spaces to the last '@'
      // before the next '/', quote or line end.
      const bool ended_at_space = authority_end < text.size() && IsSpace(text[authority_end]);
      if (colon != std::string_view::npos &&
          early.substr(colon + 1).find_first_not_of("0123456789") != std::string_view::npos &&
          (!at_in_early || ended_at_space)) {
        size_t reach = authority_end;
        if (ended_at_space) {
          while (reach < text.size() && text[reach] != '/' && text[reach] != '\n' &&
                 text[reach] != '\r' && !(EndsWord(text[reach]) && !IsSpace(text[reach])))
            ++reach;
        } else {
          while (reach < text.size() && !IsSpace(text[reach])) ++reach;
        }
        const size_t last_at = text.substr(host, reach - host).rfind('@');
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
  MaskPrintedSecrets(out);
  return out;
}

}  // namespace trainlock
