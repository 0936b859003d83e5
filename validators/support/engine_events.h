// The engine protocol's event bodies (trainlock.engine/1, docs/validate.md "The engine
// protocol"), declared once for every engine. Each body is an X-macro field list X(type, name),
// in check_metrics.h's field types, whose member names are the JSON keys; each list makes one
// struct with one writer (ToJson: the native worker) and one tolerant reader (ReadMetrics<T>:
// the coordinator's fold, support/engine_transcript.cc). engine_protocol.cc builds the table of
// events and members from these lists (with check_metrics.h's ArtifactRow for `artifact` and
// TrainStepMetrics for `measurement`), and engine_protocol_python.cc writes the same table, the
// protocol's name, its line limit and its error kinds as the Python engines' module
// (trainlock_engine/protocol_generated.py), so no side spells a member by hand.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>

#include "project/round_trip_engines.h"
#include "report/check_metrics.h"

namespace trainlock {

// The protocol's name, as `hello` says it, and the longest line an engine may write.
inline constexpr const char* kEngineProtocol = "trainlock.engine/1";
inline constexpr size_t kMaxEngineLineBytes = size_t{1} << 20;

// The `error` event's kinds an engine may say and the exit code it ends with on each: 2 the
// input cannot be honoured (refused before any work), 4 a checkpoint was refused, 5 training
// (or a pinned file) failed. X(kind, exit code).
#define TRAINLOCK_ENGINE_ERROR_KINDS(X) \
  X(input, 2)                           \
  X(unsupported, 2)                     \
  X(checkpoint, 4)                      \
  X(integrity, 5)                       \
  X(model, 5)                           \
  X(out_of_memory, 5)                   \
  X(non_finite_loss, 5)                 \
  X(training, 5)

// The points of a save --hold-save-at names (TRAINLOCK_SAVE_POINTS, kSavePoints) are declared
// with the engines' capabilities, project/round_trip_engines.h.

// `restored` and `checkpoint`, which the round trip's checks read most of.
#define TRAINLOCK_RESTORED_EVENT(X)                                                    \
  X(Integer, step)                                                                     \
  X(Text, dir)                                                                         \
  X(Integer, bytes)                                                                    \
  X(Number, seconds)                                                                   \
  X(Flag, rng_restored)  /* false: the process was told not to (a negative control) */ \
  X(Flag, data_restored) /* the same for the data position */                          \
  X(Integer, world_size_saved)                                                         \
  X(Flag, data_position_carried)                                                       \
  X(Flag, data_position_offered)                                                       \
  X(Integer, grad_accum)                                                               \
  X(Free, skipped_uncommitted) /* the torn checkpoints passed over */                  \
  X(Free, resumed_from)                                                                \
  X(Flag, weights_only)                                                                \
  X(Number, gbps)            /* the native worker's */                                 \
  X(Integer, verified_files) /* the portable process's: tensor files, manifest, hash */

#define TRAINLOCK_CHECKPOINT_EVENT(X)                                                             \
  X(Text, phase) /* "started" | "held" | "committed" | "steady" (--steady-saves) */               \
  X(Integer, step)                                                                                \
  X(Text, point) /* "held": where the save stopped (kSavePoints) */                               \
  X(Flag, async)                                                                                  \
  X(Text, dir)                                                                                    \
  X(Integer, bytes)                                                                               \
  X(Number, seconds)    /* from the save's start to its commit */                                 \
  X(Number, blocking_s) /* training held up: the save call and any staging wait */                \
  X(Number, write_s)                                                                              \
  X(Number, staging_wait_s)                                                                       \
  X(Number, staging_s)                                                                            \
  X(Integer, files)                                                                               \
  X(Number, staging_alloc_s) /* the native worker's */                                            \
  X(Number, gbps)                                                                                 \
  X(Number, step_after_save_s) /* the Python engines': the next step's wall time */               \
  X(Number, stall_s)           /* blocking_s + that step's stretch + release_s */                 \
  X(Number, release_s)         /* the Python engines': releasing the staged copy at the commit */ \
  /* "steady": a later save in the run's mode (--steady-saves), never restored */                 \
  X(Integer, ordinal)           /* the run's how-manieth save: 2 for the first steady one */      \
  X(Number, stretch_s)          /* how much the following steps outlasted median_step_s */        \
  X(Number, median_step_s)      /* the median of the run-mode steps before the save */            \
  X(Integer, steps_after)       /* the steps timed after the save */                              \
  X(Integer, new_pinned_bytes)  /* page-locked host memory the save allocated; -1 unknown */      \
  X(Integer, host_growth_bytes) /* the process's resident memory growth across the save */

// The other events' bodies.
#define TRAINLOCK_HELLO_EVENT(X)               \
  X(Text, protocol) /* "trainlock.engine/1" */ \
  X(Text, engine)                              \
  X(Text, role)                                \
  X(Integer, pid)                              \
  X(Integer, world_size)                       \
  X(Text, device)                              \
  X(Text, device_name)                         \
  X(Free, versions) /* {package: version}, read from the running framework */

#define TRAINLOCK_SETUP_EVENT(X)                                          \
  X(Free, data)  /* what it trains on (train.step's data) */              \
  X(Free, model) /* {source: "weights" | "seeded initialisation", ...} */ \
  X(Number, seconds)

#define TRAINLOCK_STEP_EVENT(X) \
  X(Integer, step)              \
  X(Free, loss) /* a number; null when the engine could not say */

#define TRAINLOCK_EVAL_EVENT(X)                                   \
  X(Text, when) /* "after_save" | "after_restore" | "portable" */ \
  X(Number, loss)                                                 \
  X(Integer, step)

#define TRAINLOCK_STATE_EVENT(X) \
  X(Integer, step)               \
  X(Integer, bytes)              \
  X(Text, file) /* where it says it wrote; the coordinator reads the file it named */

#define TRAINLOCK_ERROR_EVENT(X)                                                    \
  X(Text, kind) /* TRAINLOCK_ENGINE_ERROR_KINDS, or the coordinator's "protocol" */ \
  X(Text, message)                                                                  \
  X(Integer, step)                                                                  \
  X(Free, memory) /* out_of_memory: train.step's memory members */

struct RestoredEvent {
  TRAINLOCK_RESTORED_EVENT(TRAINLOCK_METRICS_MEMBER)
};
struct HelloEvent {
  TRAINLOCK_HELLO_EVENT(TRAINLOCK_METRICS_MEMBER)
};
struct SetupEvent {
  TRAINLOCK_SETUP_EVENT(TRAINLOCK_METRICS_MEMBER)
};
struct StepEvent {
  TRAINLOCK_STEP_EVENT(TRAINLOCK_METRICS_MEMBER)
};
struct EvalEvent {
  TRAINLOCK_EVAL_EVENT(TRAINLOCK_METRICS_MEMBER)
};
struct StateEvent {
  TRAINLOCK_STATE_EVENT(TRAINLOCK_METRICS_MEMBER)
};
struct ErrorEvent {
  TRAINLOCK_ERROR_EVENT(TRAINLOCK_METRICS_MEMBER)
};
struct CheckpointEvent {
  TRAINLOCK_CHECKPOINT_EVENT(TRAINLOCK_METRICS_MEMBER)
};

// The one writer and the one reader of each body (ReadMetrics<T> in check_metrics.h).
#define TRAINLOCK_DECLARE_EVENT(Type)   \
  nlohmann::json ToJson(const Type& m); \
  void ReadInto(const nlohmann::json& j, Type* m);
TRAINLOCK_DECLARE_EVENT(HelloEvent)
TRAINLOCK_DECLARE_EVENT(SetupEvent)
TRAINLOCK_DECLARE_EVENT(RestoredEvent)
TRAINLOCK_DECLARE_EVENT(StepEvent)
TRAINLOCK_DECLARE_EVENT(CheckpointEvent)
TRAINLOCK_DECLARE_EVENT(EvalEvent)
TRAINLOCK_DECLARE_EVENT(StateEvent)
TRAINLOCK_DECLARE_EVENT(ErrorEvent)
#undef TRAINLOCK_DECLARE_EVENT

}  // namespace trainlock
