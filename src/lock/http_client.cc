// libcurl requests, retries and hashed downloads; see http_client.h.
#include "lock/http_client.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <memory>
#include <mutex>
#include <thread>

#include "base/redact.h"
#include "base/sha256.h"
#include "base/strings.h"

namespace trainlock {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlHandle {
  CURL* curl = curl_easy_init();
  curl_slist* headers = nullptr;
  // libcurl's own words for a failure: more than curl_easy_strerror, and it may quote the
  // URL, credentials included (HttpError redacts them).
  char error[CURL_ERROR_SIZE] = {};
  ~CurlHandle() {
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
  }
};

size_t CollectHeader(char* data, size_t size, size_t count, void* user) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(user);
  std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) headers->clear();  // a new response (redirect, 100)
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    const std::string name = AsciiLower(line.substr(0, colon));
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t\r\n") + 1);
    (*headers)[name] = value;
  }
  return size * count;
}

// An error page in place of a download is read (for the status) but not kept: one that never
// ends is cut off here, long before the download's own limit.
constexpr uint64_t kMaxErrorPageBytes = 1u << 20;

struct BodySink {
  std::string* body = nullptr;
  uint64_t limit = 0;
  bool too_large = false;
  int fd = -1;  // a download's file
  Sha256* hash = nullptr;
  uint64_t written = 0;
  uint64_t discarded = 0;  // a download's error page: dropped, cut off at kMaxErrorPageBytes
  CURL* curl = nullptr;
};

bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Whether the answer declares (Content-Length) a body larger than the sink takes: then not
// one byte of it is kept or written.
bool DeclaredTooLarge(const BodySink& sink) {
  curl_off_t declared = -1;
  if (curl_easy_getinfo(sink.curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &declared) != CURLE_OK)
    return false;
  return declared > 0 && static_cast<uint64_t>(declared) > sink.limit;
}

size_t CollectBody(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  const size_t n = size * count;
  if (sink->fd >= 0) {
    long status = 0;
    curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status >= 300) {  // an error page: not the file, but not endless either
      sink->discarded += n;
      if (sink->discarded <= kMaxErrorPageBytes) return n;
      sink->too_large = true;
      return 0;
    }
    if (sink->written + n > sink->limit || (sink->written == 0 && DeclaredTooLarge(*sink))) {
      sink->too_large = true;  // not one byte past the limit reaches the file
      return 0;                // aborts the transfer
    }
    if (!WriteAll(sink->fd, data, n)) return 0;
    sink->hash->Update(data, n);
    sink->written += n;
    return n;
  }
  if (sink->body->size() + n > sink->limit || (sink->body->empty() && DeclaredTooLarge(*sink))) {
    sink->too_large = true;
    return 0;  // aborts the transfer
  }
  sink->body->append(data, n);
  return n;
}

// Common options; returns the handle ready to perform.
void Configure(CurlHandle& h, const HttpRequest& r, std::map<std::string, std::string>* headers,
               BodySink* sink) {
  curl_easy_setopt(h.curl, CURLOPT_URL, r.url.c_str());
  // HTTP(S) only, redirects included: an index page's link to file:///dev/zero would otherwise
  // be read (and never end), and ~/.netrc's credentials could go out over ftp://.
  curl_easy_setopt(h.curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h.curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h.curl, CURLOPT_ERRORBUFFER, h.error);
  curl_easy_setopt(h.curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h.curl, CURLOPT_CONNECTTIMEOUT, std::min(r.timeout_s, 10L));
  if (r.total_timeout) curl_easy_setopt(h.curl, CURLOPT_TIMEOUT, r.timeout_s);
  // A server that trickles (a byte a second) never trips a connect timeout, and a download has
  // no total one: below this speed for timeout_s seconds the transfer is abandoned.
  curl_easy_setopt(h.curl, CURLOPT_LOW_SPEED_LIMIT, kLowSpeedBytesPerSecond);
  curl_easy_setopt(h.curl, CURLOPT_LOW_SPEED_TIME, r.timeout_s);
  // Credentials for an index or registry come from ~/.netrc, never from a URL a lock keeps.
  curl_easy_setopt(h.curl, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_OPTIONAL));
  curl_easy_setopt(h.curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h.curl, CURLOPT_MAXREDIRS, 5L);
  // Credentials go to the host they were meant for, not to a redirect target.
  curl_easy_setopt(h.curl, CURLOPT_UNRESTRICTED_AUTH, 0L);
  curl_easy_setopt(h.curl, CURLOPT_USERAGENT, "trainlock/0.1");
  if (r.method == "HEAD") curl_easy_setopt(h.curl, CURLOPT_NOBODY, 1L);
  for (const std::string& header : r.headers)
    h.headers = curl_slist_append(h.headers, header.c_str());
  if (h.headers) curl_easy_setopt(h.curl, CURLOPT_HTTPHEADER, h.headers);
  curl_easy_setopt(h.curl, CURLOPT_HEADERFUNCTION, CollectHeader);
  curl_easy_setopt(h.curl, CURLOPT_HEADERDATA, headers);
  curl_easy_setopt(h.curl, CURLOPT_WRITEFUNCTION, CollectBody);
  curl_easy_setopt(h.curl, CURLOPT_WRITEDATA, sink);
}

void ThrowOnCurlError(CURLcode code, const HttpRequest& r, const BodySink& sink,
                      const CurlHandle& h) {
  if (code == CURLE_OK) return;
  if (sink.too_large) {
    throw HttpError(RedactUrl(r.url) + ": response larger than " +
                    std::to_string(r.max_body_bytes) + " bytes");
  }
  std::string why = h.error[0] ? h.error : curl_easy_strerror(code);
  if (code == CURLE_PARTIAL_FILE) why = "truncated transfer (connection closed before the end)";
  if (code == CURLE_OPERATION_TIMEDOUT) {
    why = "timed out: no progress (under " + std::to_string(kLowSpeedBytesPerSecond) +
          " bytes/s) for " + std::to_string(r.timeout_s) + " s" +
          (r.total_timeout ? " or over " + std::to_string(r.timeout_s) + " s in all" : "");
  }
  throw HttpError(RedactUrl(r.url) + ": " + why);
}

// A header value with CR or LF would end the header and start another one of the sender's
// choosing (a token "x\r\nX-Evil: 1"). Refused, naming the header but never its value.
void RefuseBrokenHeaders(const HttpRequest& r) {
  for (const std::string& header : r.headers) {
    if (header.find_first_of("\r\n") == std::string::npos) continue;
    throw HttpError(RedactUrl(r.url) + ": refusing to send the " +
                    header.substr(0, header.find(':')) +
                    " header: its value has a line break (CR or LF) in it");
  }
}

bool Retryable(long status) {
  return status == 429 || status >= 500;
}

}  // namespace

HttpError::HttpError(const std::string& what) : std::runtime_error(RedactCredentials(what)) {}

HttpResponse HttpFetch(const HttpRequest& request) {
  RefuseBrokenHeaders(request);
  GlobalInit();
  CurlHandle h;
  if (!h.curl) throw HttpError("libcurl: cannot create a handle");
  HttpResponse response;
  BodySink sink;
  sink.body = &response.body;
  sink.limit = request.max_body_bytes;
  sink.curl = h.curl;
  Configure(h, request, &response.headers, &sink);
  ThrowOnCurlError(curl_easy_perform(h.curl), request, sink, h);
  curl_easy_getinfo(h.curl, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

HttpResponse HttpFetchWithRetries(const HttpRequest& request, const RetryPolicy& retry) {
  RefuseBrokenHeaders(request);  // before any attempt: no retry makes it right
  auto backoff = retry.first_backoff;
  for (int attempt = 1;; ++attempt) {
    try {
      HttpResponse r = HttpFetch(request);
      if (!Retryable(r.status) || attempt >= retry.attempts) return r;
    } catch (const HttpError&) {
      if (attempt >= retry.attempts) throw;
    }
    std::this_thread::sleep_for(backoff);
    backoff *= 2;
  }
}

std::string HttpConnectProblem(const std::string& url, long timeout_s) {
  GlobalInit();
  CurlHandle h;
  if (!h.curl) return "libcurl: cannot create a handle";
  curl_easy_setopt(h.curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h.curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h.curl, CURLOPT_ERRORBUFFER, h.error);
  curl_easy_setopt(h.curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h.curl, CURLOPT_CONNECT_ONLY, 1L);
  curl_easy_setopt(h.curl, CURLOPT_CONNECTTIMEOUT, timeout_s);
  curl_easy_setopt(h.curl, CURLOPT_TIMEOUT, timeout_s);
  const CURLcode code = curl_easy_perform(h.curl);
  if (code == CURLE_OK) return "";
  return RedactCredentials(h.error[0] ? h.error : curl_easy_strerror(code));
}

DownloadResult HttpDownload(const HttpRequest& request, int fd, uint64_t max_bytes) {
  RefuseBrokenHeaders(request);
  GlobalInit();
  CurlHandle h;
  if (!h.curl) throw HttpError("libcurl: cannot create a handle");
  Sha256 hash;
  std::map<std::string, std::string> headers;
  BodySink sink;
  sink.fd = fd;
  sink.limit = max_bytes;
  sink.hash = &hash;
  sink.curl = h.curl;
  Configure(h, request, &headers, &sink);
  DownloadResult result;
  CURLcode code = curl_easy_perform(h.curl);
  curl_easy_getinfo(h.curl, CURLINFO_RESPONSE_CODE, &result.status);
  result.bytes = sink.written;
  // An endless error page was cut off: the answer is its status, as for any error page.
  if (sink.too_large && sink.discarded > kMaxErrorPageBytes) return result;
  if (sink.too_large) {
    result.over_limit = true;
    return result;
  }
  if (code != CURLE_OK) ThrowOnCurlError(code, request, sink, h);
  if (result.status < 200 || result.status >= 300) return result;
  result.sha256 = hash.HexDigest();
  return result;
}

}  // namespace trainlock
