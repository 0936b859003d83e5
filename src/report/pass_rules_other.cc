// The pass rules of data.*, ops.custom, comm.*, perf.* and ext.command (pass_rules.h).
#include <cmath>

#include "report/pass_rules_internal.h"

namespace trainlock::pass_rules {

// data.model and data.dataset: every pinned file found with its size and sha256, some bytes
// read, and every token shard's ids below the vocabulary.
Findings Data(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<DataMetrics>(metrics);
  Findings out;
  if (Said(m.problem))
    Add(out, TRAINLOCK_METRIC_KEY(DataMetrics, problem), *m.problem,
        "restore the file the lock pins, or re-lock (`trainlock lock`) if the change is intended");
  if (!m.files_pinned || *m.files_pinned <= 0) {
    Add(out, TRAINLOCK_METRIC_KEY(DataMetrics, files_pinned), "it states no files_pinned");
  } else if (m.files_verified != m.files_pinned) {
    Add(out, TRAINLOCK_METRIC_KEY(DataMetrics, files_verified),
        "files_verified " + std::to_string(m.files_verified.value_or(0)) + " of files_pinned " +
            std::to_string(*m.files_pinned));
  }
  if (!m.bytes || *m.bytes <= 0)
    Add(out, TRAINLOCK_METRIC_KEY(DataMetrics, bytes), "it verified no bytes (bytes)");
  if (!m.token_shards) return out;
  if (!m.vocab_size || *m.vocab_size <= 0 || !m.token_shards->is_object()) {
    Add(out, TRAINLOCK_METRIC_KEY(DataMetrics, vocab_size),
        "its token_shards state no vocab_size to be below");
    return out;
  }
  for (const auto& [path, shard] : m.token_shards->items()) {
    const auto s = ReadMetrics<TokenShardMetrics>(shard);
    if (!s.max_token_id || *s.max_token_id < 0 || *s.max_token_id >= *m.vocab_size)
      Add(out, TRAINLOCK_METRIC_KEY(DataMetrics, token_shards),
          "token_shards: " + path + "'s max_token_id " +
              (s.max_token_id ? std::to_string(*s.max_token_id) : "(none)") +
              " is not below vocab_size " + std::to_string(*m.vocab_size),
          "the shard was tokenized for another vocabulary: re-tokenize it or fix vocab_size");
  }
  return out;
}

Findings Ops(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<OpsMetrics>(metrics);
  Findings out;
  if (!m.failures || !m.failures->is_array()) {
    Add(out, TRAINLOCK_METRIC_KEY(OpsMetrics, failures), "it has no failures list");
  } else if (!m.failures->empty()) {
    Add(out, TRAINLOCK_METRIC_KEY(OpsMetrics, failures),
        "failures lists " + std::to_string(m.failures->size()) + " failure(s)");
  }
  return out;
}

// comm.allreduce: every sum exact, and the peak bus bandwidth at least the threshold it states.
Findings Allreduce(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<AllreduceMetrics>(metrics);
  Findings out;
  if (!IsTrue(m.sums_exact))
    Add(out, TRAINLOCK_METRIC_KEY(AllreduceMetrics, sums_exact), "sums_exact is not true",
        "an all-reduce returned wrong sums: suspect the interconnect or the NCCL/driver pairing; "
        "run nccl-tests with -c 1 on this node");
  if (m.threshold_gbps && *m.threshold_gbps > 0 &&
      !(m.peak_busbw_gbps.value_or(0.0) >= *m.threshold_gbps))
    Add(out, TRAINLOCK_METRIC_KEY(AllreduceMetrics, peak_busbw_gbps),
        "peak_busbw_gbps " + NumberText(m.peak_busbw_gbps.value_or(0.0)) +
            " is below threshold_gbps " + NumberText(*m.threshold_gbps),
        "check NVLink/xGMI state (nvidia-smi nvlink -s, topo -m), NCCL_P2P/NCCL_IB settings and "
        "PCIe link width");
  return out;
}

// comm.ddp: the averaged gradients equal the single process's, and no GPU rank a straggler (CPU
// processes share cores: their timing is no node finding).
Findings Ddp(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<DdpMetrics>(metrics);
  Findings out;
  if (!IsTrue(m.gradients_equal_within_tolerance))
    Add(out, TRAINLOCK_METRIC_KEY(DdpMetrics, gradients_equal_within_tolerance),
        "gradients_equal_within_tolerance is not true",
        "gradient averaging is wrong: suspect the collective library or a rank with different "
        "data or weights");
  if (m.straggler_rank && m.device.value_or("") != "cpu")
    Add(out, TRAINLOCK_METRIC_KEY(DdpMetrics, straggler_rank),
        "straggler_rank " + std::to_string(*m.straggler_rank) +
            " is slower than the median by "
            "more than the margin",
        "check its GPU's clocks, temperature and throttle reasons (env.health) and its "
        "PCIe/NVLink links");
  return out;
}

// perf.*: every device measured against a threshold, none below it, and perf.matmul's rate at
// the power limit not below its sustained threshold where it has one.
Findings Perf(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<PerfMetrics>(metrics);
  Findings out;
  if (!m.devices || m.devices->empty()) {
    Add(out, TRAINLOCK_METRIC_KEY(PerfMetrics, devices), "it measured no device");
    return out;
  }
  for (const PerfDevice& d : *m.devices) {
    const Number threshold = d.threshold.value_or(std::nullopt);
    const std::string gpu = "GPU " + std::to_string(d.index.value_or(-1));
    if (!d.value || !threshold) {
      Add(out, TRAINLOCK_METRIC_KEY(PerfMetrics, devices), gpu + " has no value or no threshold");
    } else if (!(*d.value >= *threshold)) {
      Add(out, TRAINLOCK_METRIC_KEY(PerfMetrics, devices),
          gpu + "'s value " + NumberText(*d.value) + " is below its threshold " +
              NumberText(*threshold),
          "a slow or throttled GPU: check env.health (clocks, thermal, power) and drain the node");
    }
    // perf.matmul's rate at the power limit: judged where its threshold is a number (null: the
    // catalog has no figure for the model, said in the summary).
    const Number sustained = d.sustained_threshold.value_or(std::nullopt);
    if (sustained && !d.sustained_value) {
      Add(out, TRAINLOCK_METRIC_KEY(PerfMetrics, devices),
          gpu + " has a sustained threshold but no sustained value");
    } else if (sustained && !(*d.sustained_value >= *sustained)) {
      Add(out, TRAINLOCK_METRIC_KEY(PerfMetrics, devices),
          gpu + "'s sustained value " + NumberText(*d.sustained_value) +
              " is below its sustained threshold " + NumberText(*sustained),
          "a GPU slower at its power limit than a healthy one of its model: check env.health "
          "(clocks, thermal, power), compare with a healthy GPU of its model, run NVIDIA's "
          "diagnostics (`dcgmi diag -r 3`) and drain the node");
    }
  }
  return out;
}

Findings Command(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<CommandMetrics>(metrics);
  Findings out;
  if (IsTrue(m.timed_out))
    Add(out, TRAINLOCK_METRIC_KEY(CommandMetrics, timed_out), "timed_out is true",
        "see output_tail; make the smoke command finish in time (fewer steps) or raise "
        "[ext.command] timeout-s");
  if (!m.exit_code || *m.exit_code != 0)
    Add(out, TRAINLOCK_METRIC_KEY(CommandMetrics, exit_code),
        "exit_code " + (m.exit_code ? std::to_string(*m.exit_code) : std::string("(none)")) +
            " is not 0",
        "see output_tail in the metrics for the command's last output");
  return out;
}

}  // namespace trainlock::pass_rules
