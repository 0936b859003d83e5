// The run's shape and recipe; see run_config.h.
#include "run/run_config.h"

namespace trainlock {

int64_t ModelConfig::ParameterCount() const {
  int64_t kv_dim = num_heads ? num_kv_heads * head_dim() : 0;
  int64_t attention = hidden_size * hidden_size * 2 + hidden_size * kv_dim * 2;
  int64_t mlp = 3 * hidden_size * intermediate_size;
  int64_t norms = 2 * hidden_size;
  int64_t embeddings = vocab_size * hidden_size * (tie_embeddings ? 1 : 2);
  return num_layers * (attention + mlp + norms) + embeddings + hidden_size;
}

std::vector<ShapeProblem> ModelShapeProblems(const ModelConfig& m) {
  std::vector<ShapeProblem> problems;
  if (m.hidden_size && m.num_heads && m.hidden_size % m.num_heads != 0) {
    problems.push_back({"num_heads",
                        "model.hidden_size " + std::to_string(m.hidden_size) +
                            " is not divisible by model.num_heads " + std::to_string(m.num_heads),
                        ""});
  } else if (m.head_dim() % 2 != 0) {
    problems.push_back({"num_heads",
                        "model head dimension " + std::to_string(m.head_dim()) +
                            " is odd; rotary embeddings need an even head dimension",
                        ""});
  }
  if (m.num_heads && m.num_kv_heads && m.num_heads % m.num_kv_heads != 0) {
    problems.push_back(
        {"num_kv_heads",
         "model.num_heads " + std::to_string(m.num_heads) +
             " is not a multiple of model.num_kv_heads " + std::to_string(m.num_kv_heads),
         "grouped-query attention shares each kv head among num_heads / num_kv_heads heads"});
  }
  const RopeScaling& r = m.rope_scaling;
  if (r.type == "llama3" && r.high_freq_factor <= r.low_freq_factor) {
    problems.push_back({"rope_scaling",
                        "'model.rope_scaling.high_freq_factor' must be greater than "
                        "low_freq_factor",
                        "Llama 3 uses low_freq_factor 1, high_freq_factor 4"});
  }
  return problems;
}

}  // namespace trainlock
