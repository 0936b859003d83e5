// The writers and tolerant readers of the engine protocol's event bodies; see engine_events.h.
// The keys are the member names of the field lists there (#name); no key is spelled here.
#include "support/engine_events.h"

#include "report/metric_fields.h"

namespace trainlock {

TRAINLOCK_DEFINE_METRICS(HelloEvent, TRAINLOCK_HELLO_EVENT)
TRAINLOCK_DEFINE_METRICS(SetupEvent, TRAINLOCK_SETUP_EVENT)
TRAINLOCK_DEFINE_METRICS(RestoredEvent, TRAINLOCK_RESTORED_EVENT)
TRAINLOCK_DEFINE_METRICS(StepEvent, TRAINLOCK_STEP_EVENT)
TRAINLOCK_DEFINE_METRICS(CheckpointEvent, TRAINLOCK_CHECKPOINT_EVENT)
TRAINLOCK_DEFINE_METRICS(EvalEvent, TRAINLOCK_EVAL_EVENT)
TRAINLOCK_DEFINE_METRICS(StateEvent, TRAINLOCK_STATE_EVENT)
TRAINLOCK_DEFINE_METRICS(ErrorEvent, TRAINLOCK_ERROR_EVENT)

}  // namespace trainlock
