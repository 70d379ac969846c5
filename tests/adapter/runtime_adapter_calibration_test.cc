// The runtime adapter calibrates the costs it projects with from the runtime's measured
// iterations: its own clock or the runtime's measurements, a runtime far slower than its profile,
// prefill and decode apart.
#include <cmath>

#include <gtest/gtest.h>

#include "adapter_fixture.h"

namespace tempokv {
namespace {

using std::chrono::milliseconds;
using adapter_testing::AdapterFixture;

TEST(RuntimeAdapter, ARuntimesOwnMeasurementsCalibrateInsteadOfItsClock) {
  AdapterFixture f;  // 10 ms decode steps by the profile
  ASSERT_TRUE(f.adapter->add_request({1, 1000, 0, 0, 400}).is_ok());
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  ASSERT_TRUE(f.adapter->prefill_done(1).is_ok());
  std::vector<uint64_t> decoders{1};
  for (uint32_t n = 2; n < 40; ++n) {
    ASSERT_TRUE(f.adapter->iteration_started({}, decoders).is_ok());
    const IterationCost cost = f.adapter->open_iteration_cost();
    EXPECT_EQ(cost.decode, milliseconds(10));
    EXPECT_EQ(cost.prefill, Duration::zero());
    // The runtime measured 30 ms; the adapter's clock sees 5 ms (its messages came late).
    f.adapter->iteration_measured(cost, milliseconds(30));
    f.stack.ex.run_for(milliseconds(5));
    ASSERT_TRUE(f.adapter->tokens_generated(1, n).is_ok());
  }
  EXPECT_NEAR(f.adapter->decode_cost_scale(), 3.0, 0.01);
  EXPECT_EQ(f.adapter->stats().iterations_calibrated, 38u);
  EXPECT_TRUE(f.adapter->stats().runtime_measures);
  EXPECT_EQ(f.adapter->stats().running, 1u);
  EXPECT_EQ(f.adapter->stats().waiting, 0u);
}

TEST(RuntimeAdapter, CalibrationReachesARuntime30TimesSlowerThanItsProfile) {
  // vLLM's CPU backend against the cpu-small profile: its steps take 30x the profile's cost.
  // One measurement moves the scale at most 4x, but repeated ones must get there (a clamp of
  // each ratio to [1/4, 4] of the profile kept the scale at 4 and every TTU ~8x too short).
  // The TTU checked below is 12 s away, beyond the TTU horizon (on by default), where a request
  // without a hit gets no exact estimate: this test projects in full.
  ControllerOptions full;
  full.ttu_horizon = false;
  AdapterFixture f(full);  // 10 ms decode steps by the profile
  ASSERT_TRUE(f.adapter->add_request({1, 1000, 0, 0, 400}).is_ok());
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  ASSERT_TRUE(f.adapter->prefill_done(1).is_ok());
  std::vector<uint64_t> decoders{1};
  for (uint32_t n = 2; n < 60; ++n) {
    ASSERT_TRUE(f.adapter->iteration_started({}, decoders).is_ok());
    f.adapter->iteration_measured(f.adapter->open_iteration_cost(), milliseconds(300));
    ASSERT_TRUE(f.adapter->tokens_generated(1, n).is_ok());
  }
  EXPECT_NEAR(f.adapter->decode_cost_scale(), 30.0, 0.3);
  ASSERT_TRUE(f.adapter->add_request({2, 1000, 0, 0, 400}).is_ok());
  std::vector<uint64_t> waiting{2};
  ASSERT_TRUE(f.adapter->update_order(waiting).is_ok());
  // 41 more tokens predicted (the prior of 100) at the measured 300 ms.
  EXPECT_NEAR(to_seconds(f.adapter->last_ttu(2).value()), 41 * 0.300, 0.15);
  // One outlier still moves it by at most the weight of a 4x ratio.
  ASSERT_TRUE(f.adapter->iteration_started({}, decoders).is_ok());
  const double before = f.adapter->decode_cost_scale();
  f.adapter->iteration_measured(f.adapter->open_iteration_cost(), std::chrono::hours(1));
  EXPECT_NEAR(f.adapter->decode_cost_scale(), before * std::pow(4.0, 0.2), 0.01 * before);
}

TEST(RuntimeAdapter, AFreshAdapterTakesItsFirstMeasurementsScaleAtOnceThenAverages) {
  // A fresh daemon's adapter against a runtime 17x slower than its profile (vLLM on CPU): the
  // first measured step sets the scale (an EWMA from the profile's 1x took ~20 steps to get
  // within 10 %), the n-th weighs 1/n until that falls below calibration_weight (0.2).
  AdapterFixture f;
  ASSERT_TRUE(f.adapter->add_request({1, 1000, 0, 0, 400}).is_ok());
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  ASSERT_TRUE(f.adapter->prefill_done(1).is_ok());
  std::vector<uint64_t> decoders{1};
  uint32_t tokens = 1;
  auto step = [&](double ratio) {
    ASSERT_TRUE(f.adapter->iteration_started({}, decoders).is_ok());
    const IterationCost cost = f.adapter->open_iteration_cost();
    f.adapter->iteration_measured(cost,
                                  std::chrono::duration_cast<Duration>(cost.total() * ratio));
    ASSERT_TRUE(f.adapter->tokens_generated(1, ++tokens).is_ok());
  };
  EXPECT_EQ(f.adapter->decode_cost_scale(), 1.0);
  step(17.0);
  EXPECT_EQ(f.adapter->cost_scale(), 1.0);  // decode steps only: the prefill scale is not moved
  EXPECT_NEAR(f.adapter->decode_cost_scale(), 17.0, 0.01);
  step(17.0);
  EXPECT_NEAR(f.adapter->decode_cost_scale(), 17.0, 0.01);
  // An outlier 100x above: clamped to 4x the scale, weighted 1/3.
  step(1700.0);
  EXPECT_NEAR(f.adapter->decode_cost_scale(), 17.0 * std::pow(4.0, 1.0 / 3), 0.01);
  // From the 5th measurement on, the configured weight: 0.2 of the log step.
  step(17.0);
  const double before = f.adapter->decode_cost_scale();
  step(17.0 * 2);
  const double after = std::exp(std::log(before) + 0.2 * (std::log(34.0) - std::log(before)));
  EXPECT_NEAR(f.adapter->decode_cost_scale(), after, 0.01);
}

// vLLM's CPU backend against cpu-small: its prefill chunks take ~70x the profile's cost, its
// decode steps ~20x. One scale for both projected a decode step after a few prefills at ~45x,
// so the next boundary came twice as late as it did. Here prefills take 60x and
// decode steps 20x, as the runtime measures them (iteration_measured): each keeps its own
// scale, and an iteration with both is split by the decode scale. Before the first decode-only
// step the decode scale follows the prefill's.
TEST(RuntimeAdapter, PrefillAndDecodeStepsAreCalibratedApart) {
  AdapterFixture f;  // 10 ms decode steps by the profile
  f.profile.prefill_a_s = 0.005;  // and 5 ms per prefill chunk
  f.adapter = RuntimeAdapter::create(*f.controller, f.profile, {.max_active = 2}).value();
  ASSERT_TRUE(f.adapter->add_request({1, 1000, 0, 0, 5}).is_ok());  // 5 tokens
  ASSERT_TRUE(f.adapter->admitted(1).is_ok());
  std::vector<uint64_t> one{1};
  ASSERT_TRUE(f.adapter->iteration_started(one, {}).is_ok());
  f.adapter->iteration_measured(f.adapter->open_iteration_cost(), milliseconds(300));  // 60x
  EXPECT_NEAR(f.adapter->cost_scale(), 60.0, 1e-9);
  EXPECT_NEAR(f.adapter->decode_cost_scale(), 60.0, 1e-9);  // none measured yet: the same
  ASSERT_TRUE(f.adapter->prefill_done(1).is_ok());
  uint32_t tokens = 1;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(f.adapter->iteration_started({}, one).is_ok());
    f.adapter->iteration_measured(f.adapter->open_iteration_cost(), milliseconds(200));  // 20x
    ASSERT_TRUE(f.adapter->tokens_generated(1, ++tokens).is_ok());
  }
  EXPECT_NEAR(f.adapter->decode_cost_scale(), 20.0, 1e-9);
  EXPECT_NEAR(f.adapter->cost_scale(), 60.0, 1e-9);
  // Request 2 prefills beside request 1's decode: 5 ms × 60 + 10 ms × 20 = 500 ms.
  ASSERT_TRUE(f.adapter->add_request({2, 1000, 0, 0, 400}).is_ok());
  ASSERT_TRUE(f.adapter->admitted(2).is_ok());
  ASSERT_TRUE(f.adapter->iteration_started(std::vector<uint64_t>{2}, one).is_ok());
  f.adapter->iteration_measured(f.adapter->open_iteration_cost(), milliseconds(500));
  EXPECT_NEAR(f.adapter->cost_scale(), 60.0, 1e-9);  // the decode's 200 ms taken out first
  EXPECT_NEAR(f.adapter->decode_cost_scale(), 20.0, 1e-9);
  // Request 1 makes its 5th and last token in this iteration, so request 3 takes its slot at
  // the iteration's end: projected with both scales, 500 ms (one scale of 60 would say 900 ms,
  // one of 20 would say 300 ms).
  ASSERT_TRUE(f.adapter->add_request({3, 1000, 0, 0, 400}).is_ok());
  ASSERT_TRUE(f.adapter->update_order(std::vector<uint64_t>{3}).is_ok());
  EXPECT_NEAR(to_seconds(f.adapter->last_ttu(3).value()), 0.500, 1e-6);
}

}  // namespace
}  // namespace tempokv
