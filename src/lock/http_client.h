// HTTP over libcurl for the resolvers (OCI registries, the Hugging Face Hub): one request
// with a timeout, bounded retries with exponential backoff for transport errors, 429 and
// 5xx, and streaming downloads that hash as they write. Every request honours its timeout as
// given (a stall limit, and a total one for bodies kept in memory) and refuses a body whose
// declared Content-Length is over its limit before reading it. Credentials for a host come from
// ~/.netrc (or $NETRC) when the URL carries none: they are never written into a URL we store.
// Request headers (credentials) never appear in errors or logs, URLs in errors have their userinfo
// redacted (base/redact.h), and a header with a line break in it is refused, never sent (no header
// injection).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainlock {

// The request could not complete (DNS, refused, timeout, truncated body, too large);
// what() names the URL (without credentials) and the cause.
// Its message is redacted (base/redact.h) whatever went into it: a URL, libcurl's text.
class HttpError : public std::runtime_error {
 public:
  explicit HttpError(const std::string& what);
};

struct HttpRequest {
  std::string method = "GET";  // GET or HEAD
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  // Seconds the transfer may go without progress: below kLowSpeedBytesPerSecond for this long
  // (connecting, waiting for the first byte or trickling) aborts it. With total_timeout it
  // also bounds the whole request; a download of a large file sets total_timeout = false so
  // that it may take longer than timeout_s in all while it keeps moving.
  long timeout_s = 30;
  bool total_timeout = true;
  uint64_t max_body_bytes = uint64_t{64} << 20;  // bodies kept in memory
};

// The slowest transfer that counts as progress (bytes per second, averaged over timeout_s).
inline constexpr long kLowSpeedBytesPerSecond = 1024;

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // lower-case names; the last value wins
  std::string body;

  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

struct RetryPolicy {
  int attempts = 4;
  std::chrono::milliseconds first_backoff{200};  // doubled per retry
};

// One request. Throws HttpError on a transport failure or a header with CR or LF in it; any
// HTTP status is returned.
HttpResponse HttpFetch(const HttpRequest& request);

// HttpFetch retried on HttpError, 429 and 5xx; the last answer or error is returned/thrown.
HttpResponse HttpFetchWithRetries(const HttpRequest& request, const RetryPolicy& retry = {});

// Whether a connection to `url`'s server opens within `timeout_s` seconds (through the proxy
// the environment names, TLS handshake and certificate check included; nothing is requested):
// "" when it does, else why not, in libcurl's words (naming the host and port), credentials
// redacted. One attempt, no retry: a probe before work that would otherwise retry for minutes.
std::string HttpConnectProblem(const std::string& url, long timeout_s);

struct DownloadResult {
  long status = 0;
  uint64_t bytes = 0;       // written to the file
  bool over_limit = false;  // the server sent more than max_bytes: stopped there
  std::string sha256;       // of the bytes written, when the transfer completed
};

// Streams a GET into the open file `fd`, hashing it, and stops (over_limit) before writing a
// byte past `max_bytes`, or before writing any when the answer's Content-Length declares more. A
// non-2xx status writes nothing and is returned; transport errors throw HttpError. The caller
// removes the file when the result is not what it wanted.
DownloadResult HttpDownload(const HttpRequest& request, int fd, uint64_t max_bytes);

}  // namespace trainlock
