// RoPE frequencies; see rope_frequencies.h.
#include "run/rope_frequencies.h"

#include <cmath>
#include <numbers>

namespace trainlock {
namespace {

// Llama 3's scaling: wavelengths shorter than original/high_freq_factor are kept, longer than
// original/low_freq_factor divided by factor, and the band between interpolated smoothly.
double Llama3Scaled(double inv_freq, const RopeScaling& r) {
  const double original = static_cast<double>(r.original_max_position_embeddings);
  const double low_freq_wavelen = original / r.low_freq_factor;
  const double high_freq_wavelen = original / r.high_freq_factor;
  const double wavelen = 2 * std::numbers::pi / inv_freq;
  if (wavelen < high_freq_wavelen) return inv_freq;
  if (wavelen > low_freq_wavelen) return inv_freq / r.factor;
  const double smooth =
      (original / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
  return (1 - smooth) * inv_freq / r.factor + smooth * inv_freq;
}

}  // namespace

std::vector<double> RopeInverseFrequencies(const ModelConfig& config) {
  const int64_t dim = config.head_dim();
  std::vector<double> inv_freq;
  for (int64_t i = 0; i < dim; i += 2) {
    double f = 1.0 / std::pow(config.rope_theta, static_cast<double>(i) / dim);
    if (config.rope_scaling.type == "linear") f /= config.rope_scaling.factor;
    if (config.rope_scaling.type == "llama3") f = Llama3Scaled(f, config.rope_scaling);
    inv_freq.push_back(f);
  }
  return inv_freq;
}

}  // namespace trainlock
