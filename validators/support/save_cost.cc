// The steady-state save's arithmetic and the resident-memory reading; see save_cost.h.
#include "support/save_cost.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace trainlock::validate {

double MedianSeconds(std::vector<double> seconds) {
  if (seconds.empty()) return 0;
  const auto middle = seconds.begin() + static_cast<std::ptrdiff_t>(seconds.size() / 2);
  std::nth_element(seconds.begin(), middle, seconds.end());
  return *middle;
}

double StretchSeconds(const std::vector<double>& before, const std::vector<double>& after) {
  if (before.empty()) return 0;
  const double median = MedianSeconds(before);
  double stretch = 0;
  for (double step : after) stretch += std::max(0.0, step - median);
  return stretch;
}

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0, resident_pages = -1;
  if (!(statm >> size_pages >> resident_pages) || resident_pages < 0) return -1;
  return resident_pages * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace trainlock::validate
