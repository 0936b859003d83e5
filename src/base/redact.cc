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

// ---- What a secret looks like: the one table ----------------------------------------------

// Where a word of kSecretNameWords must stand in a variable's name (upper-cased, '-' read as
// '_'). kLastPart: at the end of the name's last '_'-separated part, so that HF_TOKEN,
// accessToken, AWS_SECRET_ACCESS_KEY and apikey are secrets while max_tokens, pad_token_id,
// tokenizer and missing_keys (torch's load_state_dict answer) are not.
enum class NamePlace { kAnywhere, kLastPart };

struct SecretNameWord {
  std::string_view word;
  NamePlace place;
};

// Words that make a variable's value a secret: DB_PASSWORD, MYSQL_PWD, SLACK_WEBHOOK_URL,
// MY_AUTH, CLIENT_SECRET, HF_TOKEN, AWS_SESSION_TOKEN, API_KEY, X-Amz-Signature, sig (an
// Azure SAS), AWS_ACCESS_KEY_ID.
constexpr SecretNameWord kSecretNameWords[] = {
    {"PASSWORD", NamePlace::kAnywhere},   {"PASSWD", NamePlace::kAnywhere},
    {"PASSPHRASE", NamePlace::kAnywhere}, {"PASS", NamePlace::kLastPart},
    {"PWD", NamePlace::kLastPart},        {"SECRET", NamePlace::kAnywhere},
    {"WEBHOOK", NamePlace::kAnywhere},    {"AUTH", NamePlace::kAnywhere},
    {"CREDENTIAL", NamePlace::kAnywhere}, {"ACCESS_KEY", NamePlace::kAnywhere},
    {"API_KEY", NamePlace::kAnywhere},    {"PRIVATE_KEY", NamePlace::kAnywhere},
    {"TOKEN", NamePlace::kLastPart},      {"KEY", NamePlace::kLastPart},
    {"SIGNATURE", NamePlace::kLastPart},  {"SIG", NamePlace::kLastPart},
};

// Names that hold a secret word but never a secret: the shell's working directories.
constexpr std::string_view kNotSecretNames[] = {"PWD", "OLDPWD"};

// How a rule of kSecretPatterns finds the secret it masks.
enum class Finds {
  kAfterWord,   // the word (any case) as a whole word, blanks, the credential: "bearer\tabc..."
  kHeader,      // the header name (any case), ':' or '=', an optional scheme word kept, the value
  kPrefixed,    // a token that announces itself by its prefix (kept): "ghp_" + 36 characters
  kAssignment,  // NAME=VALUE or NAME = VALUE whose NAME is secret (kSecretNameWords); in a URL
                // query (after '?', '&' or ';') the value ends at '&' or '#'
};

// The characters a credential is made of: where it ends.
enum class Chars {
  kAlnum,     // letters and digits (Hugging Face and GitHub classic tokens)
  kWord,      // letters, digits, '_' and '-' (GitLab, GitHub fine-grained, Slack tokens)
  kB64Token,  // RFC 6750's b64token: letters, digits and -._~+/= (bearer, basic, JWTs)
  kValue,     // anything to the next blank or quote (a password may hold any character)
};

struct SecretPattern {
  Finds finds;
  std::string_view marker;  // the word, header name or prefix; "" for kAssignment
  size_t min_length;        // of the credential: a shorter one is an ordinary word
  Chars chars;
};

// Every form of secret trainlock masks in what it prints or stores; tests/redact_test.cc plants
// each. Applied in order, each to the text the previous ones left ("***" is never masked again).
constexpr SecretPattern kSecretPatterns[] = {
    {Finds::kHeader, "authorization", 1, Chars::kValue},  // Proxy-Authorization too
    {Finds::kHeader, "x-api-key", 1, Chars::kValue},
    {Finds::kHeader, "private-token", 1, Chars::kValue},  // GitLab's header
    {Finds::kHeader, "x-auth-token", 1, Chars::kValue},
    {Finds::kAfterWord, "bearer", 8, Chars::kB64Token},
    {Finds::kPrefixed, "hf_", 30, Chars::kAlnum},   // "hf_" + 34 letters and digits
    {Finds::kPrefixed, "ghp_", 30, Chars::kAlnum},  // GitHub: personal, OAuth, user, server
    {Finds::kPrefixed, "gho_", 30, Chars::kAlnum},  // and refresh tokens, 36 characters
    {Finds::kPrefixed, "ghu_", 30, Chars::kAlnum},
    {Finds::kPrefixed, "ghs_", 30, Chars::kAlnum},
    {Finds::kPrefixed, "ghr_", 30, Chars::kAlnum},
    {Finds::kPrefixed, "github_pat_", 22, Chars::kWord},  // fine-grained, 82 characters
    {Finds::kPrefixed, "glpat-", 20, Chars::kWord},       // GitLab personal access token
    {Finds::kPrefixed, "xoxb-", 10, Chars::kWord},        // Slack bot and user tokens
    {Finds::kPrefixed, "xoxp-", 10, Chars::kWord},
    {Finds::kPrefixed, "hooks.slack.com/services/", 10, Chars::kB64Token},
    {Finds::kAssignment, "", 1, Chars::kValue},
};

// ---- Reading the table -----------------------------------------------------------------------

bool IsBlank(char c) {
  return c == ' ' || c == '\t';
}

bool IsQuote(char c) {
  return c == '\'' || c == '"' || c == '`';
}

bool IsAlnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

bool InCredential(char c, Chars chars) {
  switch (chars) {
    case Chars::kAlnum:
      return IsAlnum(c);
    case Chars::kWord:
      return IsAlnum(c) || c == '_' || c == '-';
    case Chars::kB64Token:
      return IsAlnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '+' || c == '/' ||
             c == '=';
    case Chars::kValue:
      return !IsSpace(c) && !IsQuote(c);
  }
  return false;
}

// A variable's name as kSecretNameWords reads it: upper case, '-' as '_' (x-api-key, API_KEY).
std::string SecretNameForm(std::string_view text) {
  std::string upper(text);
  for (char& c : upper)
    c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper;
}

// Whether a variable's name says its value is a secret (kSecretNameWords).
bool SecretName(std::string_view name) {
  const std::string upper = SecretNameForm(name);
  for (std::string_view not_secret : kNotSecretNames)
    if (upper == not_secret) return false;
  std::string_view last = upper;
  while (!last.empty() && last.back() == '_') last.remove_suffix(1);
  if (const size_t cut = last.rfind('_'); cut != std::string_view::npos)
    last.remove_prefix(cut + 1);
  for (const SecretNameWord& w : kSecretNameWords) {
    if (w.place == NamePlace::kAnywhere && upper.find(w.word) != std::string::npos) return true;
    if (w.place == NamePlace::kLastPart && last.size() >= w.word.size() &&
        last.substr(last.size() - w.word.size()) == w.word)
      return true;
  }
  return false;
}

// Where `needle` (lower case) next occurs in `text` from `from`, in any case.
size_t FindAnyCase(std::string_view text, std::string_view needle, size_t from) {
  for (size_t at = from; at + needle.size() <= text.size(); ++at) {
    size_t i = 0;
    while (i < needle.size() && std::tolower(static_cast<unsigned char>(text[at + i])) == needle[i])
      ++i;
    if (i == needle.size()) return at;
  }
  return std::string_view::npos;
}

// A credential found in a text: the characters [begin, end) that become kMask.
struct Span {
  size_t begin;
  size_t end;
};

// Records [begin, end) when it has at least `min` characters and is not the mask already (text
// is redacted more than once on its way: a report's string, then the terminal line quoting it).
void RecordSpan(std::string_view text, size_t begin, size_t end, size_t min,
                std::vector<Span>& found) {
  if (end - begin >= min && text.substr(begin, end - begin) != kMask) found.push_back({begin, end});
}

// The credential of `chars` that starts at `from`, recorded when it has at least `min`
// characters; returns its end, where scanning goes on.
size_t FindCredential(std::string_view text, size_t from, size_t min, Chars chars,
                      std::vector<Span>& found) {
  size_t end = from;
  while (end < text.size() && InCredential(text[end], chars)) ++end;
  RecordSpan(text, from, end, min, found);
  return end;
}

// The value that starts at `from`: a quoted one to its closing quote on the same line, else to
// the next blank or quote, and in a URL query also to '&' or '#'. Returns where scanning goes on.
size_t FindValue(std::string_view text, size_t from, bool in_query, std::vector<Span>& found) {
  if (from < text.size() && IsQuote(text[from])) {
    size_t end = from + 1;
    while (end < text.size() && text[end] != text[from] && text[end] != '\n' && text[end] != '\r')
      ++end;
    RecordSpan(text, from + 1, end, 1, found);
    return end;
  }
  size_t end = from;
  while (end < text.size() && InCredential(text[end], Chars::kValue) &&
         !(in_query && (text[end] == '&' || text[end] == '#')))
    ++end;
  RecordSpan(text, from, end, 1, found);
  return end;
}

size_t SkipBlanks(std::string_view text, size_t at) {
  while (at < text.size() && IsBlank(text[at])) ++at;
  return at;
}

// "bearer abc...": the word whole (not "unbearer"), one or more blanks, the credential.
void FindAfterWord(std::string_view text, const SecretPattern& p, std::vector<Span>& found) {
  for (size_t at = FindAnyCase(text, p.marker, 0); at != std::string_view::npos;
       at = FindAnyCase(text, p.marker, at)) {
    const size_t after = at + p.marker.size();
    const size_t from = SkipBlanks(text, after);
    at = (at > 0 && IsAlnum(text[at - 1])) || from == after
             ? after
             : FindCredential(text, from, p.min_length, p.chars, found);
  }
}

// Where a header's credential starts: after its scheme word ("Basic ", "Bearer ", "Token "),
// letters followed by blanks and more; `from` itself when there is none.
size_t AfterSchemeWord(std::string_view text, size_t from, Chars chars) {
  size_t word = from;
  while (word < text.size() && std::isalpha(static_cast<unsigned char>(text[word]))) ++word;
  const size_t next = SkipBlanks(text, word);
  const bool scheme =
      word > from && next > word && next < text.size() && InCredential(text[next], chars);
  return scheme ? next : from;
}

// "Authorization: Basic abc", "\"authorization\": \"token abc\"", "X-Api-Key=abc": the name,
// an optional closing quote, ':' or '=', an optional opening quote, an optional scheme word
// (letters, then blanks) that stays, the value.
void FindHeader(std::string_view text, const SecretPattern& p, std::vector<Span>& found) {
  for (size_t at = FindAnyCase(text, p.marker, 0); at != std::string_view::npos;
       at = FindAnyCase(text, p.marker, at)) {
    size_t i = at + p.marker.size();
    if (i < text.size() && IsQuote(text[i])) ++i;
    i = SkipBlanks(text, i);
    if (i == text.size() || (text[i] != ':' && text[i] != '=') ||
        (at > 0 && IsAlnum(text[at - 1]))) {
      at = i;
      continue;
    }
    i = SkipBlanks(text, i + 1);
    if (i < text.size() && IsQuote(text[i])) ++i;
    at = FindCredential(text, AfterSchemeWord(text, i, p.chars), p.min_length, p.chars, found);
  }
}

// "ghp_abc...": the prefix at the start of a word, kept, and at least min_length characters.
void FindPrefixed(std::string_view text, const SecretPattern& p, std::vector<Span>& found) {
  for (size_t at = text.find(p.marker); at != std::string_view::npos;
       at = text.find(p.marker, at)) {
    const size_t from = at + p.marker.size();
    at = at > 0 && IsAlnum(text[at - 1]) ? from
                                         : FindCredential(text, from, p.min_length, p.chars, found);
  }
}

bool NameChar(char c) {
  return IsAlnum(c) || c == '_' || c == '-';
}

// NAME=VALUE and NAME = VALUE ("DB_PASSWORD=x", "aws_secret_access_key = x", "?token=x&a=b")
// whose NAME is secret. Not a comparison ("==", "!=", "<="), not a file's or an attribute's
// name ("trainlock.key=KEY.key", "self.token = t": no variable is named after a '.'). Each
// character is looked at a bounded number of times: a name ends at the '=' before it.
void FindAssignments(std::string_view text, const SecretPattern&, std::vector<Span>& found) {
  for (size_t eq = text.find('='); eq != std::string_view::npos; eq = text.find('=', eq + 1)) {
    if (eq + 1 < text.size() && text[eq + 1] == '=') {
      ++eq;
      continue;
    }
    size_t end = eq;
    while (end > 0 && IsBlank(text[end - 1])) --end;
    size_t begin = end;
    while (begin > 0 && NameChar(text[begin - 1])) --begin;
    if (begin == end || (begin > 0 && text[begin - 1] == '.') ||
        !SecretName(text.substr(begin, end - begin)))
      continue;
    const bool in_query =
        begin > 0 && (text[begin - 1] == '?' || text[begin - 1] == '&' || text[begin - 1] == ';');
    eq = FindValue(text, SkipBlanks(text, eq + 1), in_query, found) - 1;
  }
}

// `text` with each span (in order, disjoint) replaced by kMask, in one pass.
std::string Masked(std::string_view text, const std::vector<Span>& spans) {
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  for (const Span& span : spans) {
    out += text.substr(at, span.begin - at);
    out += kMask;
    at = span.end;
  }
  out += text.substr(at);
  return out;
}

// One rule of kSecretPatterns over `text`: its credentials found first, then replaced in one
// pass, so that a text full of them costs linear time, not a copy per credential.
void Apply(std::string& text, const SecretPattern& p) {
  std::vector<Span> found;
  switch (p.finds) {
    case Finds::kAfterWord:
      FindAfterWord(text, p, found);
      break;
    case Finds::kHeader:
      FindHeader(text, p, found);
      break;
    case Finds::kPrefixed:
      FindPrefixed(text, p, found);
      break;
    case Finds::kAssignment:
      FindAssignments(text, p, found);
      break;
  }
  if (!found.empty()) text = Masked(text, found);
}

// The values of this process's secret-named environment variables (SecretName), longest first
// (so that one value inside another is masked whole). Short values ("1", "yes") are not secrets
// and would mask ordinary words.
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
  std::vector<Span> found;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size()))
    found.push_back({at, at + what.size()});
  if (!found.empty()) text = Masked(text, found);
}

// Secrets a program may print (a smoke command's output, an engine's stderr, an HTTP library
// echoing its request): the values of this process's secret-named environment variables, then
// every form of kSecretPatterns.
void MaskPrintedSecrets(std::string& text) {
  for (const std::string& value : SecretEnvironmentValues()) ReplaceAll(text, value);
  for (const SecretPattern& p : kSecretPatterns) Apply(text, p);
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
