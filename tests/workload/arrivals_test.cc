#include "workload/arrivals.h"

#include <gtest/gtest.h>

namespace tempokv {
namespace {

std::vector<Request> n_requests(size_t n) {
  std::vector<Request> v(n);
  for (size_t i = 0; i < n; ++i) v[i].arrival = std::chrono::seconds(int64_t(i));
  return v;
}

TEST(Arrivals, FixedIntervals) {
  auto v = n_requests(3);
  ArrivalOptions o;
  o.interval = std::chrono::milliseconds(250);
  ASSERT_TRUE(assign_arrivals(v, o).is_ok());
  EXPECT_EQ(v[2].arrival, std::chrono::milliseconds(500));
}

TEST(Arrivals, PoissonIsSeededWithTheConfiguredRate) {
  auto a = n_requests(4000), b = n_requests(4000);
  ArrivalOptions o;
  o.kind = ArrivalKind::kPoisson;
  o.rate_per_s = 4;
  o.seed = 3;
  ASSERT_TRUE(assign_arrivals(a, o).is_ok());
  ASSERT_TRUE(assign_arrivals(b, o).is_ok());
  EXPECT_EQ(a.back().arrival, b.back().arrival);
  EXPECT_EQ(a[0].arrival, Duration::zero());
  EXPECT_NEAR(to_seconds(a.back().arrival) / 3999, 0.25, 0.02);
  for (size_t i = 1; i < a.size(); ++i) EXPECT_GE(a[i].arrival, a[i - 1].arrival);
}

TEST(Arrivals, TimestampsAreScaled) {
  auto v = n_requests(3);
  ArrivalOptions o;
  o.kind = ArrivalKind::kTimestamps;
  o.time_scale = 0.5;
  ASSERT_TRUE(assign_arrivals(v, o).is_ok());
  EXPECT_EQ(v[2].arrival, std::chrono::seconds(1));
  EXPECT_EQ(*parse_arrival_kind("poisson"), ArrivalKind::kPoisson);
  EXPECT_FALSE(parse_arrival_kind("bursty").is_ok());
  o.time_scale = 0;
  EXPECT_EQ(assign_arrivals(v, o).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tempokv
