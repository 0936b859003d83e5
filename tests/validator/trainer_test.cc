// The native trainer's activation checkpointing (training.activation_checkpointing): each
// decoder layer's activations are recomputed in backward, replaying the forward's dropout
// draws, so training is bitwise the same as with stored activations; the step's peak of live
// bytes drops; and the measured shape states recomputation only when the recompute ran.
#include <gtest/gtest.h>

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "engines/native/trainer.h"

namespace trainlock {
namespace {

using validate::Trainer;
using validate::TrainerOptions;

// A small Llama with dropout (so the recompute must replay the forward's RNG draws) whose
// activations outweigh its parameters (so dropping them shows in the peak).
TrainConfig DropoutConfig(bool checkpointing) {
  TrainConfig c;
  c.model.architecture = "llama";
  c.model.hidden_size = 32;
  c.model.num_layers = 4;
  c.model.num_heads = 4;
  c.model.num_kv_heads = 2;
  c.model.intermediate_size = 64;
  c.model.vocab_size = 64;
  c.model.dropout = 0.1;
  c.training.seq_len = 64;
  c.training.micro_batch = 8;
  c.training.grad_accum = 2;
  c.training.activation_checkpointing = checkpointing;
  return c;
}

std::unique_ptr<Trainer> MakeTrainer(const TrainConfig& config, bool replay_rng = true) {
  TrainerOptions options;
  options.seed = 7;
  options.recompute_replays_rng = replay_rng;
  return std::make_unique<Trainer>(config, options,
                                   validate::SyntheticTokens(11, config.model.vocab_size, 1 << 16));
}

std::vector<double> Losses(Trainer& trainer, int steps) {
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) losses.push_back(trainer.Step());
  return losses;
}

// Three steps' losses and the final parameters and optimizer moments, as exact fingerprints.
// One run at a time: the trainers share the global generators their dropout draws from.
struct TrainedRun {
  std::vector<double> losses;
  std::vector<std::string> state;
};
TrainedRun Train(const TrainConfig& config, bool replay_rng = true) {
  auto trainer = MakeTrainer(config, replay_rng);
  TrainedRun run{Losses(*trainer, 3), {}};
  for (const validate::NamedTensor& t : trainer->FinalState())
    run.state.push_back(t.name + " " + validate::TensorFingerprint(t.tensor));
  return run;
}

TEST(ActivationCheckpointing, TrainsBitwiseLikeStoredActivationsWithDropout) {
  const TrainedRun stored = Train(DropoutConfig(false));
  const TrainedRun recomputed = Train(DropoutConfig(true));
  EXPECT_EQ(recomputed.losses, stored.losses);
  EXPECT_EQ(recomputed.state, stored.state);
}

// The negative control of the test above: a recompute that draws fresh dropout masks instead
// of replaying the forward's computes other gradients, and the comparison sees it.
TEST(ActivationCheckpointing, ARecomputeThatSkipsTheRngReplayTrainsDifferently) {
  const TrainedRun stored = Train(DropoutConfig(false));
  const TrainedRun unreplayed = Train(DropoutConfig(true), /*replay_rng=*/false);
  EXPECT_EQ(unreplayed.losses.front(), stored.losses.front());  // the forward draws the same
  EXPECT_NE(unreplayed.losses, stored.losses);
  EXPECT_NE(unreplayed.state, stored.state);
}

TEST(ActivationCheckpointing, RecomputesEveryDecoderLayerOfEveryMicroBatch) {
  const TrainConfig config = DropoutConfig(true);
  auto trainer = MakeTrainer(config);
  trainer->Step();
  EXPECT_EQ(trainer->model()->recomputed_layers(),
            config.model.num_layers * config.training.grad_accum);
}

TEST(ActivationCheckpointing, EvaluationRecomputesNothing) {
  auto trainer = MakeTrainer(DropoutConfig(true));
  trainer->EvalLoss();
  EXPECT_EQ(trainer->model()->recomputed_layers(), 0);
}

TEST(ActivationCheckpointing, TheMeasuredShapeStatesRecomputationThatRan) {
  auto trainer = MakeTrainer(DropoutConfig(true));
  validate::StepMeasurement m;
  trainer->MeasuredStep(&m);
  EXPECT_TRUE(m.activation_checkpointing);
}

// Observed, not copied from the config: a model that stores its activations although the
// config asks for checkpointing is reported as not recomputing.
TEST(ActivationCheckpointing, TheMeasuredShapeIsObservedNotCopiedFromTheConfig) {
  auto trainer = MakeTrainer(DropoutConfig(true));
  trainer->model()->SetActivationCheckpointing(false);
  validate::StepMeasurement m;
  trainer->MeasuredStep(&m);
  EXPECT_FALSE(m.activation_checkpointing);
}

// The CPU allocator's live bytes, as LibTorch reports them to a memory profiler in this
// thread (the autograd engine runs a CPU backward in the calling thread): the running sum of
// every allocation and free, and its peak. Deterministic, unlike the process's resident set.
class LiveBytes : public c10::MemoryReportingInfoBase {
 public:
  // The totals' type changed from int64_t to size_t between LibTorch versions: one of these
  // two overrides the base's, whichever it declares.
  void reportMemoryUsage(void*, int64_t size, int64_t, int64_t, c10::Device) { Add(size); }
  void reportMemoryUsage(void*, int64_t size, size_t, size_t, c10::Device) { Add(size); }
  bool memoryProfilingEnabled() const override { return true; }
  int64_t peak() const { return peak_; }

 private:
  void Add(int64_t size) {
    live_ += size;
    peak_ = std::max(peak_, live_);
  }
  int64_t live_ = 0, peak_ = 0;
};

// The peak of live CPU bytes over building a trainer and two steps.
int64_t PeakLiveBytes(const TrainConfig& config) {
  auto live = std::make_shared<LiveBytes>();
  {
    c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, live);
    auto trainer = MakeTrainer(config);
    Losses(*trainer, 2);
  }
  return live->peak();
}

TEST(ActivationCheckpointing, LowersThePeakOfLiveBytesOfAStep) {
  const int64_t stored = PeakLiveBytes(DropoutConfig(false));
  const int64_t recomputed = PeakLiveBytes(DropoutConfig(true));
  EXPECT_GT(stored, 0);
  // Four layers keep one layer's activations at a time: well under the stored run's peak.
  EXPECT_LT(recomputed, stored * 3 / 4) << "stored " << stored << ", recomputed " << recomputed;
}

}  // namespace
}  // namespace trainlock
