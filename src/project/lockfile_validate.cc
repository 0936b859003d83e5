// [validate] of a manifest or lock: the round trip's steps, checkpoint and tolerances, its engine
// (and, in a lock, the engine's pin), the required check ids and how long a pass stands.
#include "project/lockfile_reader.h"

#include "base/strings.h"
#include "base/suggest.h"
#include "base/time_text.h"
#include "project/check_ids.h"
#include "project/round_trip_engines.h"

namespace trainlock {

namespace {

// [validate] valid-for = "24h": how long a passing report stands. A duration a person reads
// ("24h", "7d", "1h30m"), at least a minute (a shorter window would expire before a job
// starts) and at most a year.
void ReadValidFor(TomlFields& f, ValidateSection& v) {
  std::optional<std::string> text = f.String("valid-for", Need::kOptional);
  if (!text) return;
  std::optional<int64_t> seconds = ParseDurationSeconds(*text);
  if (!seconds || *seconds < 60 || *seconds > 366 * 86400) {
    f.Error(f.Pos("valid-for"),
            "'validate.valid-for' = " + Quoted(*text) + " is not a duration from 1m to 366d",
            "write it as e.g. \"24h\", \"7d\" or \"1h30m\" (units w d h m s)");
    return;
  }
  v.valid_for_s = *seconds;
}

}  // namespace

// validate.engine, and in a lock the pin of a Python engine's shipped files.
void LockfileReader::ReadEngine(TomlFields& f, ValidateSection& v) {
  if (auto engine = f.String("engine", Need::kOptional)) {
    if (!FindRoundTripEngine(*engine)) {
      const std::vector<std::string> names = RoundTripEngineNames();
      const std::vector<std::string_view> views(names.begin(), names.end());
      std::string hint = DidYouMean(*engine, views);
      f.Error(f.Pos("engine"), "unknown engine " + Quoted(*engine) + " in 'validate.engine'",
              (hint.empty() ? "" : hint + "; ") + "engines: " + JoinStrings(names, ", "));
    } else {
      v.engine = *engine;
    }
  }
  if (!lock()) return;
  const RoundTripEngine* engine = FindRoundTripEngine(v.engine);
  auto sha =
      f.String("engine-sha256", engine && engine->python ? Need::kRequired : Need::kOptional);
  CheckSha256(f, "engine-sha256", sha);
  v.engine_sha256 = sha.value_or("");
}

void LockfileReader::ReadValidate(const toml::table& t) {
  TomlFields f = Fields(t, "validate");
  ValidateSection& v = spec_.validate;
  v.steps = f.Integer("steps", Need::kOptional, 2, 1000000).value_or(v.steps);
  if (auto at = f.Integer("checkpoint-at", Need::kOptional, 1, 1000000)) {
    if (*at >= v.steps) {
      f.Error(f.Pos("checkpoint-at"),
              "'validate.checkpoint-at' = " + std::to_string(*at) +
                  " must be below 'validate.steps' = " + std::to_string(v.steps),
              "the resumed run needs steps after the checkpoint");
    }
    v.checkpoint_at = *at;
  } else if (v.checkpoint_at >= v.steps) {
    v.checkpoint_at = v.steps / 2;
  }
  v.eval_batches = f.Integer("eval-batches", Need::kOptional, 1, 10000).value_or(v.eval_batches);
  v.keep_last = f.Integer("keep-last", Need::kOptional, 1, 100).value_or(v.keep_last);
  v.loss_tolerance = f.Number("loss-tolerance", Need::kOptional, 0, 1).value_or(v.loss_tolerance);
  v.eval_tolerance = f.Number("eval-tolerance", Need::kOptional, 0, 1).value_or(v.eval_tolerance);
  if (auto dir = f.String("checkpoint-dir", Need::kOptional)) {
    // Absolute paths are allowed: the checkpoint storage of the long run lives outside the project.
    if (dir->front() != '/') CheckRelativePath(f, "checkpoint-dir", *dir, f.Pos("checkpoint-dir"));
    v.checkpoint_dir = *dir;
  }
  ReadEngine(f, v);
  if (auto required = f.StringArray("required", Need::kOptional)) {
    for (const std::string& id : *required) {
      if (!IsCheckId(id)) {
        f.Error(f.Pos("required"), "unknown check id " + Quoted(id) + " in 'validate.required'",
                DidYouMean(id, kCheckIds));
      }
    }
    v.required = *required;
  }
  ReadValidFor(f, v);
  f.Finish();
}

}  // namespace trainlock
