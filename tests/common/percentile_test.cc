#include "common/percentile.h"

#include <gtest/gtest.h>

namespace tempokv {
namespace {

TEST(Percentile, InterpolatesLinearlyBetweenOrderStatistics) {
  std::vector<double> v{5, 1, 4, 2, 3};
  EXPECT_DOUBLE_EQ(percentile(v, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(percentile(v, 0.95), 4.8);  // position 3.8
  EXPECT_DOUBLE_EQ(percentile(v, 0.99), 4.96);
  EXPECT_DOUBLE_EQ(percentile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 1.0), 5.0);
  EXPECT_DOUBLE_EQ(percentile({7}, 0.95), 7.0);
  EXPECT_DOUBLE_EQ(percentile({}, 0.95), 0.0);
}

TEST(Median, IsTheMiddleValueOrTheMeanOfTheTwoMiddleOnes) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7.0);
  EXPECT_DOUBLE_EQ(median({}), 0.0);
}

TEST(NearestRankPercentile, IsTheCeilOfQTimesNthSmallestValue) {
  std::vector<double> twenty;
  for (int i = 20; i >= 1; --i) twenty.push_back(i);
  EXPECT_DOUBLE_EQ(nearest_rank_percentile(twenty, 0.95), 19.0);
  EXPECT_DOUBLE_EQ(nearest_rank_percentile(twenty, 0.5), 10.0);  // a measured value, not 10.5
  EXPECT_DOUBLE_EQ(nearest_rank_percentile(twenty, 0.951), 20.0);
  EXPECT_DOUBLE_EQ(nearest_rank_percentile(twenty, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(nearest_rank_percentile(twenty, 1.0), 20.0);
  EXPECT_DOUBLE_EQ(nearest_rank_percentile({}, 0.95), 0.0);
}

}  // namespace
}  // namespace tempokv
