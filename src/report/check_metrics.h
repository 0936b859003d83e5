// The typed metrics of each check: what a CheckResult's `metrics` object (report.h) holds, one
// struct per check with its fields and units. A struct has one writer, ToJson, that the validator
// and the torch-free checks use to fill `metrics`, and one tolerant reader, ReadMetrics<T>, that
// the report view, the renderers, the gate and plan use. Nothing else spells a metric key:
// tests/check_metrics_test.cc fails on a key's string literal anywhere else in src/ or
// validators/.
//
// Each field list below is an X-macro X(type, name): the member's name is its JSON key, so a key
// is written once. The types and what a reader gets:
//   std::optional<double | int64_t | bool | std::string>  absent when nullopt; a member that is
//        missing or ill-typed reads as nullopt (a non-finite number too);
//   OrNull<T>    written as null when the inner value is nullopt (a value the validator could not
//        know); absent, null or ill-typed reads as nullopt outside / nullopt inside;
//   Free         free-form JSON (nested tables, arrays of names), any value as it is;
//   Numbers      an array of numbers; an entry that is not a finite number reads as NaN;
//   Rows<T>      an array of objects of struct T; a non-object entry reads as an empty T.
// Reading never throws: a report is untrusted input (report_view.h).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainlock {

template <class T>
using OrNull = std::optional<std::optional<T>>;
using Free = std::optional<nlohmann::json>;
using Numbers = std::optional<std::vector<double>>;
template <class T>
using Rows = std::optional<std::vector<T>>;
using Number = std::optional<double>;
using Integer = std::optional<int64_t>;
using Flag = std::optional<bool>;
using Text = std::optional<std::string>;

// One file the lock pins, as the worker that read it measured it while reading it
// (validators/support/pinned_files.h): train.step's and ops.custom's `artifacts`.
#define TRAINLOCK_ARTIFACT_ROW(X)                    \
  X(Text, path)                                      \
  X(Text, sha256) /* of the bytes the worker read */ \
  X(Integer, bytes)                                  \
  X(Text, verified_by) /* "worker": the process that used the file hashed it */

// train.step, and the worker's measurement it is made of. Seconds, bytes, tokens, FLOPs.
#define TRAINLOCK_TRAIN_STEP_METRICS(X)                                              \
  X(Integer, step)       /* the measured step's number */                            \
  X(Number, step_time_s) /* seconds of one optimizer step */                         \
  X(Integer, tokens)     /* tokens per step */                                       \
  X(Number, tokens_per_s)                                                            \
  X(Number, flops)                 /* model FLOPs of the step */                     \
  X(Integer, peak_rss_bytes)       /* the training process's peak resident set */    \
  X(Integer, peak_allocated_bytes) /* -1 off CUDA */                                 \
  X(Integer, peak_reserved_bytes)                                                    \
  X(Integer, device_used_bytes)                                                      \
  X(Integer, device_total_bytes)                                                     \
  X(Text, mode)          /* "deterministic" | "default" (the run's kernels) */       \
  X(Free, step_times_s)  /* seconds of each timed step, mode "default" */            \
  X(Free, deterministic) /* the deterministic measurement (TrainStepMetrics) */      \
  X(Text, device)        /* "cuda:0", "cpu" */                                       \
  X(Text, device_name)                                                               \
  X(Free, data)          /* the data source's description */                         \
  X(Free, model)         /* where the weights came from */                           \
  X(Free, shape)         /* train_shape.h */                                         \
  X(OrNull<double>, mfu) /* fraction of the catalog's dense peak; null unknown */    \
  X(Number, peak_tflops)                                                             \
  X(Free, measured_shape) /* MeasuredShapeMetrics */                                 \
  X(Flag, out_of_memory)                                                             \
  X(Text, error)      /* the out-of-memory message */                                \
  X(Text, cannot_run) /* the engine refused this environment: the node not judged */ \
  X(Integer, seq_len)                                                                \
  X(Integer, micro_batch)                                                            \
  X(Free, estimate)           /* MemoryEstimateMetrics */                            \
  X(Free, remedies)           /* ranked remedies, strings */                         \
  X(Rows<RankStepRow>, ranks) /* merged report: every rank's step */                 \
  X(Integer, slowest_rank)                                                           \
  X(Number, slowest_to_median)    /* slowest rank's tokens/s over the median */      \
  X(Rows<ArtifactRow>, artifacts) /* pinned files the training worker read */        \
  X(Number, straggler_margin)     /* merged report: slowest_to_median below 1 - this fails */

// train.step's memory estimate at an out-of-memory (plan/memory_model.h), bytes.
#define TRAINLOCK_MEMORY_ESTIMATE_METRICS(X) \
  X(Number, parameters)                      \
  X(Number, weights_bytes)                   \
  X(Number, grads_bytes)                     \
  X(Number, optimizer_bytes)                 \
  X(Number, activation_bytes)                \
  X(Number, logits_bytes)                    \
  X(Number, total_bytes)

// train.step's measured_shape: what the training worker observed in its measured step, read
// from the tensors and the trainer, never copied from the config (`shape` is the config's).
// engine "native"; param_dtype a parameter's dtype and activation_dtype the logits' (autocast's)
// in the config's words (fp32, bf16, fp16); world_size the processes the step's gradients were
// reduced across; activation_checkpointing whether the trainer recomputed activations.
#define TRAINLOCK_MEASURED_SHAPE_METRICS(X) \
  X(Text, engine)                           \
  X(Text, param_dtype)                      \
  X(Text, activation_dtype)                 \
  X(Integer, world_size)                    \
  X(Flag, activation_checkpointing)

// One rank's row of train.step's `ranks` (merged report); the same units as train.step.
#define TRAINLOCK_RANK_STEP_ROW(X) \
  X(Integer, rank)                 \
  X(Text, device)                  \
  X(Text, device_name)             \
  X(Number, tokens_per_s)          \
  X(Number, step_time_s)           \
  X(Integer, peak_allocated_bytes) \
  X(Integer, peak_reserved_bytes)

// A rank's `train` object in the merged report's `ranks` entries: its train.step and
// train.roundtrip figures.
#define TRAINLOCK_RANK_TRAIN_METRICS(X) \
  X(Text, device_name)                  \
  X(Number, tokens_per_s)               \
  X(Number, step_time_s)                \
  X(Integer, peak_allocated_bytes)      \
  X(Integer, peak_reserved_bytes)       \
  X(Text, reference_digest)             \
  X(Flag, bitwise_equal)

// train.roundtrip: seconds, bytes, GB/s; losses per step.
#define TRAINLOCK_ROUNDTRIP_METRICS(X)                                                             \
  X(Integer, steps)                                                                                \
  X(Integer, checkpoint_at) /* the step the preempted process saved at */                          \
  X(Free, pids)             /* uninterrupted, preempted, resumed */                                \
  X(Text, preempted_with)   /* "SIGKILL" */                                                        \
  X(Numbers, losses_uninterrupted)                                                                 \
  X(Numbers, losses_resumed)                                                                       \
  X(Flag, rng_restored)                                                                            \
  X(Flag, data_restored)                                                                           \
  X(OrNull<int64_t>, restored_step) /* the step the resumed process restored; null: none */        \
  X(Free, checkpoint_bytes)                                                                        \
  X(Free, save_s) /* to durable storage */                                                         \
  X(Free, save_gbps)                                                                               \
  X(Number, save_blocking_s) /* what training was held up for */                                   \
  X(Number, save_staging_wait_s)                                                                   \
  X(Number, save_staging_alloc_s)                                                                  \
  X(Number, save_write_s)                                                                          \
  X(Number, save_stall_s)   /* the Python engines': blocking + next step's stretch + release */    \
  X(Number, save_release_s) /* the Python engines': releasing the staged copy at the commit */     \
  X(Free, save_steady) /* the steady-state saves (--steady-saves), each as its checkpoint event */ \
  X(Number, save_steady_stall_s)    /* the costliest steady-state save's cost to training */       \
  X(Number, save_steady_blocking_s) /* the longest a steady-state save held training up */         \
  X(Integer, save_steady_new_pinned_bytes) /* page-locked memory they allocated; -1 unknown */     \
  X(Free, restore_s)                                                                               \
  X(Free, restore_gbps)                                                                            \
  X(Flag, bitwise_equal)                                                                           \
  X(Text, reference_digest) /* sha256 of the uninterrupted run's losses and state */               \
  X(Text, golden_digest)    /* sha256 of its final state alone, as the coordinator read it         \
                               (golden_digest.h) */                                                \
  X(Number, max_abs_loss_diff)                                                                     \
  X(Flag, final_state_equal)                                                                       \
  X(OrNull<double>, max_abs_state_diff) /* null: the states were not both written */               \
  X(Number, loss_tolerance)                                                                        \
  X(Text, mode) /* "deterministic" */                                                              \
  X(Integer, first_divergent_step)                                                                 \
  X(Text, first_divergent_tensor)                                                                  \
  X(Flag, portable_beside_resume)                                                                  \
  X(Flag, portable_beside_resume_end) /* D started once C had trained its last step */             \
  X(Text, states_in) /* the final states' directory: "memory" (private, in /dev/shm), "option"     \
                        (--state-dir), "work-dir" */                                               \
  X(Text, states_not_in_memory) /* why they were not in memory */                                  \
  X(Free, processes) /* {process: {seconds, first_event_s: {event: seconds}, spawned_s, started_s, \
                        ended_s}}: where time went */                                              \
  X(OrNull<bool>, ranks_bitwise_identical) /* null: no two ranks of one GPU model */               \
  X(Free, ranks_computing_differently)                                                             \
  X(Text, engine)              /* the engine that trained, as its processes said (hello) */        \
  X(Free, engine_versions)     /* {package: version}, read inside the engine's process */          \
  X(Integer, world_size)       /* the engine's processes per run (--engine-nproc) */               \
  X(Flag, killed_during_save)  /* B died while a later save was being written */                   \
  X(Free, skipped_uncommitted) /* torn checkpoints the resumed process passed over */              \
  X(Text, kill_point)          /* --kill-point: where B's second save was held and killed */       \
  X(Flag, snapshot_equal)      /* C's state right after its restore == A's at that step; absent:   \
                                  not checked (no --kill-during-save) */                           \
  X(Text, snapshot_first_different) /* the first tensor in which they differ */                    \
  X(Free, checkpoint_verified) /* VerifiedCheckpointMetrics: B's checkpoint as the coordinator     \
                                  read it */                                                       \
  X(Free, reshard)             /* ReshardMetrics: B's checkpoint restored at another world size */ \
  X(Free, protocol_problems)   /* engine output lines ignored, and the first reason */             \
  X(Free, telemetry)           /* TelemetryMetrics: the GPUs sampled while the round trip trained */

// train.roundtrip's reshard: process E restored B's checkpoint at another world size and trained
// to the end; compared with the uninterrupted run A, which trained at the saved world size.
#define TRAINLOCK_RESHARD_METRICS(X)                                                     \
  X(Integer, saved_world_size)                                                           \
  X(Integer, restored_world_size)                                                        \
  X(Flag, bitwise_equal)                                                                 \
  X(Number, max_abs_loss_diff)                                                           \
  X(Flag, final_state_equal)                                                             \
  X(OrNull<int64_t>, restored_step)                                                      \
  X(Flag, data_position_carried) /* the engine says its data position survives N -> M */ \
  X(Numbers, losses_resharded)

// train.roundtrip's telemetry (validators/probes/gpu_telemetry.h): NVML sampled every
// interval_s while the round trip's processes trained, per GPU they trained on. Absent data is
// said, never zero: `unavailable` names why there is none ("no NVML: ...", "CPU run").
#define TRAINLOCK_TELEMETRY_METRICS(X)                                                  \
  X(Text, unavailable)  /* why nothing was sampled; absent when devices are */          \
  X(Number, interval_s) /* the sampling period */                                       \
  X(Number, window_s)   /* seconds from the first process's start to the last sample */ \
  X(Rows<TelemetryDevice>, devices)

// One GPU's samples, summarised as they came: watts, degrees Celsius, MHz, percent, seconds.
// The throttle rule (report/gpu_throttle.h) reads the limits, the reasons and the clocks held by
// clock policy; not_judged says which of its tests these numbers cannot decide, and why.
#define TRAINLOCK_TELEMETRY_DEVICE(X)                                                              \
  X(Integer, index) /* NVML's index, as nvidia-smi numbers it */                                   \
  X(Text, uuid)                                                                                    \
  X(Text, name) /* NVML's device name, "NVIDIA H200" */                                            \
  X(Integer, samples)                                                                              \
  X(Free, power_w)                 /* TelemetryRange: min, mean, max */                            \
  X(Number, power_limit_w)         /* the enforced limit (nvmlDeviceGetEnforcedPowerLimit) */      \
  X(Number, default_power_limit_w) /* nvmlDeviceGetPowerManagementDefaultLimit */                  \
  X(Number, max_sm_clock_mhz)      /* nvmlDeviceGetMaxClockInfo(SM): the GPU's highest */          \
  X(Free, temperature_c)           /* TelemetryRange: max */                                       \
  X(Free, sm_clock_mhz)            /* TelemetryRange: min, max */                                  \
  X(Free, utilization_pct)         /* TelemetryRange: mean */                                      \
  X(Number, busy_at_power_cap_s)   /* seconds busy (kBusyUtilizationPct) with sw_power_cap set */  \
  X(Free, sm_clock_at_power_cap_mhz) /* TelemetryRange: min, mean, max of those samples */         \
  X(Number, busy_clock_policy_s) /* seconds busy, applications_clocks_setting set, no power cap */ \
  X(Free, sm_clock_at_clock_policy_mhz) /* TelemetryRange: min, mean, max of those samples */      \
  X(Rows<TelemetryReason>, throttle_reasons_seen) /* every clocks-event reason, idle too */        \
  X(Integer, reason_samples) /* samples whose clocks-event reasons NVML gave (0: none judged) */   \
  X(Number, throttled_s)     /* seconds a slowdown reason (hardware, thermal, brake) held */       \
  X(Text, not_judged) /* the throttle rule's tests this GPU's data cannot decide, and why */       \
  X(Rows<TelemetrySample>, series) /* capped, evenly thinned (gpu_telemetry.h) */

#define TRAINLOCK_TELEMETRY_RANGE(X) \
  X(Number, min)                     \
  X(Number, mean)                    \
  X(Number, max)

// A clocks-event reason NVML reported: its name (gpu_idle, sw_power_cap, hw_slowdown, ...),
// the samples it was set in and the seconds those samples stand for.
#define TRAINLOCK_TELEMETRY_REASON(X) \
  X(Text, name)                       \
  X(Integer, samples)                 \
  X(Number, held_s)

// One sample of the series: seconds since the window opened, and the readings.
#define TRAINLOCK_TELEMETRY_SAMPLE(X) \
  X(Number, t_s)                      \
  X(Number, power_w)                  \
  X(Number, temperature_c)            \
  X(Number, sm_clock_mhz)             \
  X(Number, utilization_pct)          \
  X(Integer, clocks_event_reasons) /* NVML's reason bits */

// train.eval: losses (nats) before the save and after the restore.
#define TRAINLOCK_EVAL_METRICS(X)    \
  X(Number, eval_loss_before_save)   \
  X(Number, eval_loss_after_restore) \
  X(Number, abs_diff)                \
  X(Number, tolerance)

// ckpt.portable: a fresh process's eval loss from the checkpoint the coordinator verified.
#define TRAINLOCK_PORTABLE_METRICS(X)                                                          \
  X(Integer, pid)                                                                              \
  X(Number, eval_loss)                                                                         \
  X(Number, eval_loss_reference)                                                               \
  X(Number, abs_diff)                                                                          \
  X(Free, checkpoint)               /* VerifiedCheckpointMetrics: the coordinator's reading */ \
  X(Number, tolerance)              /* the largest abs_diff that passes */                     \
  X(OrNull<int64_t>, restored_step) /* the step the fresh process restored; null: none */

// The checkpoint the preempted process committed, as the coordinator itself read it after that
// process ended and before any process restored it (validators/coordinator/checkpoint_verify.h):
// train.roundtrip's `checkpoint_verified` and ckpt.portable's `checkpoint`. Nothing here is
// what an engine said.
#define TRAINLOCK_VERIFIED_CHECKPOINT_METRICS(X)                                                  \
  X(Text, step_dir)      /* the step directory read, CHECKPOINT_ROOT/step-<8 digits> */           \
  X(Integer, step)       /* the step the coordinator asked the process to save at */              \
  X(Text, commit_record) /* "trainlock-commit.json" (Python engines), "manifest.json" (native) */ \
  X(Integer, files_verified) /* files the record lists, each hashed by the coordinator */         \
  X(Integer, bytes_verified) /* their bytes */                                                    \
  X(Number, verify_s)        /* reading and hashing them */                                       \
  X(Text, verified_by)       /* "coordinator" */                                                  \
  X(Text, problem) /* what is missing or differs ("PATH: why"); absent when every file verified */

// comm.allreduce: bandwidths in GB/s (10^9 bytes/s), sizes in bytes.
#define TRAINLOCK_ALLREDUCE_METRICS(X) \
  X(Integer, world_size)               \
  X(Integer, rank)                     \
  X(Text, backend)                     \
  X(Text, dtype)                       \
  X(Flag, sums_exact)                  \
  X(Rows<AllreduceSize>, sizes)        \
  X(Number, peak_busbw_gbps)           \
  X(Text, busbw_formula)               \
  X(Number, threshold_gbps)            \
  X(Text, threshold_source)            \
  X(Text, error)

#define TRAINLOCK_ALLREDUCE_SIZE(X) \
  X(Integer, bytes)                 \
  X(Integer, iterations)            \
  X(Number, time_us)                \
  X(Number, algbw_gbps)             \
  X(Number, busbw_gbps)

// comm.ddp: gradients of ranks against one process; seconds.
#define TRAINLOCK_DDP_METRICS(X)                                           \
  X(Integer, world_size)                                                   \
  X(Integer, rank)                                                         \
  X(Integer, batch_per_rank)                                               \
  X(Text, model)                                                           \
  X(Number, max_abs_grad_diff)                                             \
  X(Number, rtol)                                                          \
  X(Number, atol)                                                          \
  X(Flag, gradients_equal_within_tolerance)                                \
  X(Number, median_step_s)                                                 \
  X(Free, step_s_per_rank)                                                 \
  X(Number, spread) /* slowest over median */                              \
  X(Number, straggler_margin)                                              \
  X(Integer, straggler_rank)                                               \
  X(Text, device) /* "cuda" | "cpu": a CPU straggler is no node finding */ \
  X(Text, error)

// env.driver, env.runtime and env.versions: version strings.
#define TRAINLOCK_ENV_VERSION_METRICS(X)                           \
  X(Text, driver_version)                                          \
  X(Text, cuda_driver_version)                                     \
  X(Text, driver_min)                                              \
  X(Text, cuda_runtime)                                            \
  X(Text, cuda_driver_supports)                                    \
  X(Text, torch)                                                   \
  X(Text, nccl)                                                    \
  X(Text, torch_locked)                                            \
  X(Text, cuda_locked)                                             \
  X(Text, nccl_locked)                                             \
  X(Text, cudnn) /* the cuDNN that trains: 9.13.0 */               \
  X(Text, cudnn_locked)                                            \
  X(Text, engine_torch)  /* a Python engine's torch.__version__ */ \
  X(Text, engine_python) /* the interpreter it runs under */       \
  X(Text, cuda_needed)   /* the newest CUDA runtime the run loads */

// env.devices and env.arch.
#define TRAINLOCK_ENV_DEVICE_METRICS(X)                                         \
  X(Integer, count)                                                             \
  X(Free, not_visible) /* NVML indices hidden from this process */              \
  X(Free, accelerators)                                                         \
  X(Free, libraries)      /* env.arch: code per library; ops.custom too */      \
  X(Free, launches)       /* env.arch: the known-answer kernel per GPU */       \
  X(Free, gpu_names)      /* env.devices: NVML's name of each GPU counted */    \
  X(Free, gpu_sms)        /* env.arch: each GPU's architecture, 90 for sm_90 */ \
  X(Integer, cuda_driver) /* env.arch: the driver's CUDA, 13000 for 13.0 */

// env.health: NVML's fields per device.
#define TRAINLOCK_HEALTH_METRICS(X)                                \
  X(Free, devices)                                                 \
  X(Free, unknown)     /* "GPU 0 <field>" NVML could not report */ \
  X(Free, open_faults) /* "GPU 3: NVML cannot open it: why" */

// perf.matmul and perf.hbm: TFLOP/s and TB/s per device against a fraction of the datasheet.
#define TRAINLOCK_PERF_METRICS(X) \
  X(Rows<PerfDevice>, devices)    \
  X(Number, threshold_fraction_of_datasheet)

#define TRAINLOCK_PERF_DEVICE(X)                                                              \
  X(Integer, index)                                                                           \
  X(Text, name)                                                                               \
  X(Number, value)                                                                            \
  X(OrNull<double>, threshold) /* null: no datasheet figure */                                \
  X(Number, sustained_value)   /* perf.matmul: the rate over the last second of back-to-back  \
                                  products, the power limiter acting; absent: not measured */ \
  X(OrNull<double>, sustained_threshold) /* null: the catalog has no figure at the limit */   \
  X(Free, method)                                                                             \
  X(Text, error)

// ops.custom.
#define TRAINLOCK_OPS_METRICS(X)                                  \
  X(Text, device)                                                 \
  X(Free, libraries)                                              \
  X(Free, failures)               /* kind, op, message, remedy */ \
  X(Rows<ArtifactRow>, artifacts) /* the op libraries the ops worker loaded */

// data.model and data.dataset.
#define TRAINLOCK_DATA_METRICS(X)                                                    \
  X(Integer, files_pinned)   /* files the lock pins */                               \
  X(Integer, files_verified) /* of those, found with their size and sha256 */        \
  X(Text, problem)           /* the first file that is not as pinned: "PATH: why" */ \
  X(Integer, bytes)                                                                  \
  X(Integer, vocab_size)                                                             \
  X(Free, token_shards) /* path -> TokenShardMetrics */

// env.packages (checks/python_packages.h): the image Python's distributions against the lock.
#define TRAINLOCK_PACKAGES_METRICS(X)                                                    \
  X(Integer, packages_locked)       /* wheels the lock pins for the target */            \
  X(Integer, packages_installed)    /* distributions found installed */                  \
  X(Free, site_packages)            /* the directories read, strings */                  \
  X(Free, packages_missing)         /* locked, not installed: "name version" */          \
  X(Free, packages_changed)         /* installed at another version */                   \
  X(Free, packages_added)           /* installed, not locked (bootstrap aside) */        \
  X(Free, packages_bootstrap)       /* pip, setuptools, wheel present unlocked */        \
  X(Free, packages_malformed)       /* "<dist-info>: why" for each unreadable one */     \
  X(Free, packages_twice)           /* installed more than once: names */                \
  X(Text, python_problem)           /* the image Python's record or --python refused */  \
  X(Integer, wheel_hashes)          /* direct_url.json wheel hashes vs the lock's */     \
  X(Integer, files_verified)        /* files whose RECORD sha256 and size matched */     \
  X(Integer, bytes_verified)        /* their bytes */                                    \
  X(Integer, files_unhashed)        /* RECORD lines the spec lets lack a hash */         \
  X(Integer, files_compiled)        /* __pycache__ files of owned sources */             \
  X(Integer, records_outside)       /* RECORD lines outside site-packages, not read */   \
  X(Integer, files_problems)        /* findings in the four lists below, all */          \
  X(Free, files_changed)            /* "<path>: why", at most 100 */                     \
  X(Free, files_missing)            /* "<path>: listed in <dist-info>'s RECORD" */       \
  X(Free, files_unowned)            /* paths no installed distribution owns */           \
  X(Free, files_unreadable)         /* "<path>: why" (link, no RECORD, a cap) */         \
  X(Integer, debs_locked)           /* Debian packages the lock pins (none: absent) */   \
  X(Free, dpkg_status)              /* the dpkg database read */                         \
  X(Free, debs_missing)             /* pinned, not installed: "name version" */          \
  X(Free, debs_changed)             /* installed at another version */                   \
  X(Free, python_files)             /* the record of the image Python's files read */    \
  X(Free, python_interpreter)       /* the interpreter it records */                     \
  X(Integer, python_files_verified) /* its files found as recorded */                    \
  X(Integer, python_bytes_verified) /* their bytes */                                    \
  X(Free, python_files_added)       /* on the Python's path, not recorded (100 shown) */ \
  X(Free, python_files_changed)     /* "<path>: why" */                                  \
  X(Free, python_files_missing)     /* recorded, gone */                                 \
  X(Free, python_files_refused)     /* "<path>: why" (sourceless .pyc, unreadable) */

// One token shard of data.dataset: its token count and largest token id.
#define TRAINLOCK_TOKEN_SHARD_METRICS(X) \
  X(Integer, tokens)                     \
  X(Integer, max_token_id)

// ext.command.
#define TRAINLOCK_COMMAND_METRICS(X) \
  X(Free, argv)                      \
  X(Text, cwd)                       \
  X(Integer, exit_code)              \
  X(Flag, timed_out)                 \
  X(Number, timeout_s)               \
  X(Number, duration_s)              \
  X(Integer, output_lines)           \
  X(Text, output_tail)               \
  X(Flag, left_processes_killed)     \
  X(Text, containment)

// A check in a distributed validation's merged report (rank_merge.h): every node's status (node
// checks), and the ranks whose own check failed (per-rank checks).
#define TRAINLOCK_NODE_MERGE_METRICS(X) \
  X(Free, nodes)                        \
  X(Free, failed_ranks) /* the other ranks whose own check failed (per-rank checks) */

#define TRAINLOCK_METRICS_MEMBER(type, name) type name;

struct ArtifactRow {
  TRAINLOCK_ARTIFACT_ROW(TRAINLOCK_METRICS_MEMBER)
};
struct RankStepRow {
  TRAINLOCK_RANK_STEP_ROW(TRAINLOCK_METRICS_MEMBER)
};
struct AllreduceSize {
  TRAINLOCK_ALLREDUCE_SIZE(TRAINLOCK_METRICS_MEMBER)
};
struct PerfDevice {
  TRAINLOCK_PERF_DEVICE(TRAINLOCK_METRICS_MEMBER)
};
struct TrainStepMetrics {
  TRAINLOCK_TRAIN_STEP_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct MeasuredShapeMetrics {
  TRAINLOCK_MEASURED_SHAPE_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct MemoryEstimateMetrics {
  TRAINLOCK_MEMORY_ESTIMATE_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct RankTrainMetrics {
  TRAINLOCK_RANK_TRAIN_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct TelemetryRange {
  TRAINLOCK_TELEMETRY_RANGE(TRAINLOCK_METRICS_MEMBER)
};
struct TelemetryReason {
  TRAINLOCK_TELEMETRY_REASON(TRAINLOCK_METRICS_MEMBER)
};
struct TelemetrySample {
  TRAINLOCK_TELEMETRY_SAMPLE(TRAINLOCK_METRICS_MEMBER)
};
struct TelemetryDevice {
  TRAINLOCK_TELEMETRY_DEVICE(TRAINLOCK_METRICS_MEMBER)
};
struct TelemetryMetrics {
  TRAINLOCK_TELEMETRY_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct RoundtripMetrics {
  TRAINLOCK_ROUNDTRIP_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct ReshardMetrics {
  TRAINLOCK_RESHARD_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct EvalMetrics {
  TRAINLOCK_EVAL_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct PortableMetrics {
  TRAINLOCK_PORTABLE_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct VerifiedCheckpointMetrics {
  TRAINLOCK_VERIFIED_CHECKPOINT_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct AllreduceMetrics {
  TRAINLOCK_ALLREDUCE_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct DdpMetrics {
  TRAINLOCK_DDP_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct EnvVersionMetrics {
  TRAINLOCK_ENV_VERSION_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct EnvDeviceMetrics {
  TRAINLOCK_ENV_DEVICE_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct HealthMetrics {
  TRAINLOCK_HEALTH_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct PerfMetrics {
  TRAINLOCK_PERF_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct OpsMetrics {
  TRAINLOCK_OPS_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct DataMetrics {
  TRAINLOCK_DATA_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct PackagesMetrics {
  TRAINLOCK_PACKAGES_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct TokenShardMetrics {
  TRAINLOCK_TOKEN_SHARD_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct CommandMetrics {
  TRAINLOCK_COMMAND_METRICS(TRAINLOCK_METRICS_MEMBER)
};
struct NodeMergeMetrics {
  TRAINLOCK_NODE_MERGE_METRICS(TRAINLOCK_METRICS_MEMBER)
};

// The one writer and the one reader of each struct. ReadInto leaves the members the JSON lacks
// as they are; ReadMetrics<T> starts from an empty T.
#define TRAINLOCK_DECLARE_METRICS(Type) \
  nlohmann::json ToJson(const Type& m); \
  void ReadInto(const nlohmann::json& j, Type* m);
TRAINLOCK_DECLARE_METRICS(ArtifactRow)
TRAINLOCK_DECLARE_METRICS(RankStepRow)
TRAINLOCK_DECLARE_METRICS(AllreduceSize)
TRAINLOCK_DECLARE_METRICS(PerfDevice)
TRAINLOCK_DECLARE_METRICS(TrainStepMetrics)
TRAINLOCK_DECLARE_METRICS(MeasuredShapeMetrics)
TRAINLOCK_DECLARE_METRICS(MemoryEstimateMetrics)
TRAINLOCK_DECLARE_METRICS(RankTrainMetrics)
TRAINLOCK_DECLARE_METRICS(TelemetryRange)
TRAINLOCK_DECLARE_METRICS(TelemetryReason)
TRAINLOCK_DECLARE_METRICS(TelemetrySample)
TRAINLOCK_DECLARE_METRICS(TelemetryDevice)
TRAINLOCK_DECLARE_METRICS(TelemetryMetrics)
TRAINLOCK_DECLARE_METRICS(RoundtripMetrics)
TRAINLOCK_DECLARE_METRICS(ReshardMetrics)
TRAINLOCK_DECLARE_METRICS(EvalMetrics)
TRAINLOCK_DECLARE_METRICS(PortableMetrics)
TRAINLOCK_DECLARE_METRICS(VerifiedCheckpointMetrics)
TRAINLOCK_DECLARE_METRICS(AllreduceMetrics)
TRAINLOCK_DECLARE_METRICS(DdpMetrics)
TRAINLOCK_DECLARE_METRICS(EnvVersionMetrics)
TRAINLOCK_DECLARE_METRICS(EnvDeviceMetrics)
TRAINLOCK_DECLARE_METRICS(HealthMetrics)
TRAINLOCK_DECLARE_METRICS(PerfMetrics)
TRAINLOCK_DECLARE_METRICS(OpsMetrics)
TRAINLOCK_DECLARE_METRICS(DataMetrics)
TRAINLOCK_DECLARE_METRICS(PackagesMetrics)
TRAINLOCK_DECLARE_METRICS(TokenShardMetrics)
TRAINLOCK_DECLARE_METRICS(CommandMetrics)
TRAINLOCK_DECLARE_METRICS(NodeMergeMetrics)
#undef TRAINLOCK_DECLARE_METRICS

template <class T>
T ReadMetrics(const nlohmann::json& j) {
  T m;
  ReadInto(j, &m);
  return m;
}

// `metrics` with the members `more` sets written over it (the others kept): for a writer that
// adds to a check another part of the validator made (rank_merge.h).
void AddMetrics(nlohmann::json* metrics, const nlohmann::json& more);

// Every key of every struct above, for tests/check_metrics_test.cc.
std::vector<std::string> AllMetricKeys();

}  // namespace trainlock
