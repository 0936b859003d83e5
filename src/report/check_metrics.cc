// The writers and tolerant readers of the typed check metrics; see check_metrics.h. The keys are
// the member names of the field lists there (#name below); no key is spelled in this file.
#include "report/check_metrics.h"

#include <algorithm>

#include <cmath>

namespace trainlock {
namespace {

using Json = nlohmann::json;

// ---- writing: nullopt leaves the member out ----

template <class T>
void PutMetric(Json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

template <class T>
void PutMetric(Json& j, const char* key, const OrNull<T>& v) {
  if (!v) return;
  j[key] = *v ? Json(**v) : Json(nullptr);
}

// NaN is written as null, as nlohmann writes it.
void PutMetric(Json& j, const char* key, const Numbers& v) {
  if (v) j[key] = *v;
}

template <class T>
void PutMetric(Json& j, const char* key, const Rows<T>& v) {
  if (!v) return;
  Json rows = Json::array();
  for (const T& row : *v) rows.push_back(ToJson(row));
  j[key] = std::move(rows);
}

// ---- reading: never throws; a missing or ill-typed member leaves nullopt ----

void GetMetric(const Json& j, const char* key, Number* out) {
  auto it = j.find(key);
  if (it != j.end() && it->is_number() && std::isfinite(it->get<double>()))
    *out = it->get<double>();
}

void GetMetric(const Json& j, const char* key, Integer* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return;
  if (it->is_number_integer()) {
    *out = it->get<int64_t>();
    return;
  }
  const double d = it->get<double>();
  if (std::isfinite(d) && std::fabs(d) < 9.2e18) *out = static_cast<int64_t>(d);
}

void GetMetric(const Json& j, const char* key, Flag* out) {
  auto it = j.find(key);
  if (it != j.end() && it->is_boolean()) *out = it->get<bool>();
}

void GetMetric(const Json& j, const char* key, Text* out) {
  auto it = j.find(key);
  if (it != j.end() && it->is_string()) *out = it->get<std::string>();
}

void GetMetric(const Json& j, const char* key, Free* out) {
  auto it = j.find(key);
  if (it != j.end()) *out = *it;
}

// A member that may be null on purpose: present (as nullopt inside when null or ill-typed).
template <class T>
void GetMetric(const Json& j, const char* key, OrNull<T>* out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  std::optional<T> inner;
  GetMetric(j, key, &inner);
  *out = inner;
}

void GetMetric(const Json& j, const char* key, Numbers* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return;
  std::vector<double> values;
  for (const Json& v : *it) {
    const bool finite = v.is_number() && std::isfinite(v.get<double>());
    values.push_back(finite ? v.get<double>() : std::nan(""));
  }
  *out = std::move(values);
}

template <class T>
void GetMetric(const Json& j, const char* key, Rows<T>* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return;
  std::vector<T> rows;
  for (const Json& row : *it) rows.push_back(ReadMetrics<T>(row));
  *out = std::move(rows);
}

}  // namespace

#define TRAINLOCK_METRICS_PUT(type, name) PutMetric(j, #name, m.name);
#define TRAINLOCK_METRICS_GET(type, name) GetMetric(j, #name, &m->name);
#define TRAINLOCK_METRICS_KEY(type, name) keys.push_back(#name);
#define TRAINLOCK_DEFINE_METRICS(Type, LIST) \
  Json ToJson(const Type& m) {               \
    Json j = Json::object();                 \
    LIST(TRAINLOCK_METRICS_PUT)              \
    return j;                                \
  }                                          \
  void ReadInto(const Json& j, Type* m) {    \
    if (!j.is_object()) return;              \
    LIST(TRAINLOCK_METRICS_GET)              \
  }

TRAINLOCK_DEFINE_METRICS(ArtifactRow, TRAINLOCK_ARTIFACT_ROW)
TRAINLOCK_DEFINE_METRICS(RankStepRow, TRAINLOCK_RANK_STEP_ROW)
TRAINLOCK_DEFINE_METRICS(AllreduceSize, TRAINLOCK_ALLREDUCE_SIZE)
TRAINLOCK_DEFINE_METRICS(PerfDevice, TRAINLOCK_PERF_DEVICE)
TRAINLOCK_DEFINE_METRICS(TrainStepMetrics, TRAINLOCK_TRAIN_STEP_METRICS)
TRAINLOCK_DEFINE_METRICS(MeasuredShapeMetrics, TRAINLOCK_MEASURED_SHAPE_METRICS)
TRAINLOCK_DEFINE_METRICS(MemoryEstimateMetrics, TRAINLOCK_MEMORY_ESTIMATE_METRICS)
TRAINLOCK_DEFINE_METRICS(RankTrainMetrics, TRAINLOCK_RANK_TRAIN_METRICS)
TRAINLOCK_DEFINE_METRICS(TelemetryRange, TRAINLOCK_TELEMETRY_RANGE)
TRAINLOCK_DEFINE_METRICS(TelemetryReason, TRAINLOCK_TELEMETRY_REASON)
TRAINLOCK_DEFINE_METRICS(TelemetrySample, TRAINLOCK_TELEMETRY_SAMPLE)
TRAINLOCK_DEFINE_METRICS(TelemetryDevice, TRAINLOCK_TELEMETRY_DEVICE)
TRAINLOCK_DEFINE_METRICS(TelemetryMetrics, TRAINLOCK_TELEMETRY_METRICS)
TRAINLOCK_DEFINE_METRICS(RoundtripMetrics, TRAINLOCK_ROUNDTRIP_METRICS)
TRAINLOCK_DEFINE_METRICS(ReshardMetrics, TRAINLOCK_RESHARD_METRICS)
TRAINLOCK_DEFINE_METRICS(EvalMetrics, TRAINLOCK_EVAL_METRICS)
TRAINLOCK_DEFINE_METRICS(PortableMetrics, TRAINLOCK_PORTABLE_METRICS)
TRAINLOCK_DEFINE_METRICS(VerifiedCheckpointMetrics, TRAINLOCK_VERIFIED_CHECKPOINT_METRICS)
TRAINLOCK_DEFINE_METRICS(AllreduceMetrics, TRAINLOCK_ALLREDUCE_METRICS)
TRAINLOCK_DEFINE_METRICS(DdpMetrics, TRAINLOCK_DDP_METRICS)
TRAINLOCK_DEFINE_METRICS(EnvVersionMetrics, TRAINLOCK_ENV_VERSION_METRICS)
TRAINLOCK_DEFINE_METRICS(EnvDeviceMetrics, TRAINLOCK_ENV_DEVICE_METRICS)
TRAINLOCK_DEFINE_METRICS(HealthMetrics, TRAINLOCK_HEALTH_METRICS)
TRAINLOCK_DEFINE_METRICS(PerfMetrics, TRAINLOCK_PERF_METRICS)
TRAINLOCK_DEFINE_METRICS(OpsMetrics, TRAINLOCK_OPS_METRICS)
TRAINLOCK_DEFINE_METRICS(DataMetrics, TRAINLOCK_DATA_METRICS)
TRAINLOCK_DEFINE_METRICS(PackagesMetrics, TRAINLOCK_PACKAGES_METRICS)
TRAINLOCK_DEFINE_METRICS(TokenShardMetrics, TRAINLOCK_TOKEN_SHARD_METRICS)
TRAINLOCK_DEFINE_METRICS(CommandMetrics, TRAINLOCK_COMMAND_METRICS)
TRAINLOCK_DEFINE_METRICS(NodeMergeMetrics, TRAINLOCK_NODE_MERGE_METRICS)
TRAINLOCK_DEFINE_METRICS(RestoredEvent, TRAINLOCK_RESTORED_EVENT)
TRAINLOCK_DEFINE_METRICS(HelloEvent, TRAINLOCK_HELLO_EVENT)
TRAINLOCK_DEFINE_METRICS(SetupEvent, TRAINLOCK_SETUP_EVENT)
TRAINLOCK_DEFINE_METRICS(StepEvent, TRAINLOCK_STEP_EVENT)
TRAINLOCK_DEFINE_METRICS(EvalEvent, TRAINLOCK_EVAL_EVENT)
TRAINLOCK_DEFINE_METRICS(StateEvent, TRAINLOCK_STATE_EVENT)
TRAINLOCK_DEFINE_METRICS(ErrorEvent, TRAINLOCK_ERROR_EVENT)
TRAINLOCK_DEFINE_METRICS(CheckpointEvent, TRAINLOCK_CHECKPOINT_EVENT)

void AddMetrics(Json* metrics, const Json& more) {
  if (!metrics->is_object()) *metrics = Json::object();
  for (const auto& [key, value] : more.items()) (*metrics)[key] = value;
}

std::vector<std::string> AllMetricKeys() {
  std::vector<std::string> keys;
  TRAINLOCK_ARTIFACT_ROW(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_RANK_STEP_ROW(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_ALLREDUCE_SIZE(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_PERF_DEVICE(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_TRAIN_STEP_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_MEMORY_ESTIMATE_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_MEASURED_SHAPE_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_RANK_TRAIN_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_ROUNDTRIP_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_RESHARD_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_TELEMETRY_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_TELEMETRY_DEVICE(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_TELEMETRY_RANGE(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_TELEMETRY_REASON(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_TELEMETRY_SAMPLE(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_EVAL_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_PORTABLE_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_VERIFIED_CHECKPOINT_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_ALLREDUCE_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_DDP_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_ENV_VERSION_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_ENV_DEVICE_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_HEALTH_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_PERF_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_OPS_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_DATA_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_PACKAGES_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_TOKEN_SHARD_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_COMMAND_METRICS(TRAINLOCK_METRICS_KEY)
  TRAINLOCK_NODE_MERGE_METRICS(TRAINLOCK_METRICS_KEY)
  // A key several structs share (bitwise_equal, restored_step, ...) is listed once.
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

#undef TRAINLOCK_DEFINE_METRICS
#undef TRAINLOCK_METRICS_KEY
#undef TRAINLOCK_METRICS_GET
#undef TRAINLOCK_METRICS_PUT

}  // namespace trainlock
