// The steady-state save's arithmetic (validators/support/save_cost.h): what a save cost the steps
// after it, against the median of the run-mode steps before it.
#include <gtest/gtest.h>

#include "support/save_cost.h"

namespace trainlock::validate {
namespace {

TEST(SaveCost, TheMedianOfAnOddCountIsItsMiddleStep) {
  EXPECT_DOUBLE_EQ(MedianSeconds({0.5, 0.4, 3.0}), 0.5);
}

TEST(SaveCost, TheMedianOfAnEvenCountIsTheUpperMiddleStep) {
  EXPECT_DOUBLE_EQ(MedianSeconds({0.4, 0.5, 0.6, 0.7}), 0.6);
}

TEST(SaveCost, NoStepsHaveNoMedian) {
  EXPECT_DOUBLE_EQ(MedianSeconds({}), 0);
}

TEST(SaveCost, EachStepAfterTheSaveCountsWhatItOutlastedTheMedian) {
  EXPECT_DOUBLE_EQ(StretchSeconds({0.4, 0.5, 0.4}, {0.9, 0.4, 0.6}), 0.5 + 0.2);
}

TEST(SaveCost, StepsNoSlowerThanTheMedianCostNothing) {
  EXPECT_DOUBLE_EQ(StretchSeconds({0.4, 0.5, 0.4}, {0.3, 0.4}), 0);
}

TEST(SaveCost, WithoutStepsBeforeThereIsNoStretch) {
  EXPECT_DOUBLE_EQ(StretchSeconds({}, {5.0}), 0);
}

TEST(SaveCost, ThisProcessHasResidentMemory) {
  EXPECT_GT(ResidentBytes(), 0);
}

}  // namespace
}  // namespace trainlock::validate
