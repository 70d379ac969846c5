// The projection-error buckets shared by tempokvd's /metrics and the eval's rows.
#include "common/error_buckets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace tempokv {
namespace {

TEST(ErrorBuckets, CountsAreCumulativeWithAValueOnABoundInThatBucket) {
  const std::vector<double> bounds{-1, 0, 1};
  const std::vector<double> values{-2, -1, -0.5, 0, 0.5, 3, std::nan("")};
  // <= -1: {-2, -1}; <= 0: and {-0.5, 0}; <= 1: and {0.5}; +Inf: and {3}; NaN is not counted.
  EXPECT_EQ(cumulative_bucket_counts(values, bounds), (std::vector<uint64_t>{2, 4, 5, 6}));
}

TEST(ErrorBuckets, TheBoundsAreSymmetricAroundZeroAndLabelledAsMetricsWritesThem) {
  const std::vector<double> b = projection_error_bounds();
  ASSERT_EQ(b.size(), 21u);
  EXPECT_EQ(b.front(), -10);
  EXPECT_EQ(b[10], 0);
  EXPECT_EQ(b.back(), 10);
  EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
  EXPECT_EQ(bucket_label(-10), "-10");
  EXPECT_EQ(bucket_label(0), "0");
  EXPECT_EQ(bucket_label(0.05), "0.05");
  EXPECT_EQ(bucket_label(-0.01), "-0.01");
}

}  // namespace
}  // namespace tempokv
