// RateCalibrator learns the read rate and the write cost from the device time each kind had:
// samples of reads alone, writes alone and both sharing the device, from a device other than the
// prior it was told.
#include "provider/rate_calibrator.h"

#include <gtest/gtest.h>

namespace tempokv::testing {
namespace {

using std::chrono::milliseconds;

constexpr double kGiBf = double(1ULL << 30);

// A device reading 9 GiB/s and writing 4 GiB/s (a written byte costs 2.25 read ones) that
// shares itself equally among the requests in flight; told as 11 GiB/s with writes as dear as
// reads.
constexpr double kRead = 9 * kGiBf, kWrite = 4 * kGiBf;

Duration seconds(double s) { return Duration(int64_t(s * 1e9)); }

// One read of `read` bytes and one write of `written` bytes start together and share the device:
// the smaller job (in device time) ends at twice its own time, the other after both times.
void together(RateCalibrator& c, TimePoint& now, double read, double written) {
  const double tr = read / kRead, tw = written / kWrite;
  c.advance(now, 0, 0);
  const double first = 2 * std::min(tr, tw), both = tr + tw;
  now += seconds(first);
  c.advance(now, 1, 1);
  if (tr <= tw)
    c.add_completed_read(uint64_t(read));
  else
    c.add_completed_write(uint64_t(written));
  now += seconds(both - first);
  c.advance(now, tr <= tw ? 0 : 1, tr <= tw ? 1 : 0);
  if (tr <= tw)
    c.add_completed_write(uint64_t(written));
  else
    c.add_completed_read(uint64_t(read));
  now += milliseconds(1);  // idle: no one's time
}

void alone(RateCalibrator& c, TimePoint& now, double read, double written) {
  c.advance(now, 0, 0);
  now += seconds(read > 0 ? read / kRead : written / kWrite);
  c.advance(now, read > 0 ? 1 : 0, read > 0 ? 0 : 1);
  if (read > 0)
    c.add_completed_read(uint64_t(read));
  else
    c.add_completed_write(uint64_t(written));
  now += milliseconds(1);
}

TEST(RateCalibrator, LearnsTheReadRateAndTheWriteCostWhileReadsAndWritesShareTheDevice) {
  RateCalibrator c(11 * kGiBf, milliseconds(50), 0.25, 1.0);
  TimePoint now{};
  for (int i = 0; i < 40; ++i) together(c, now, 0.6 * kGiBf, 0.5 * kGiBf);
  EXPECT_NEAR(c.bytes_per_s() / kRead, 1.0, 1e-3);
  EXPECT_NEAR(c.write_cost(), 2.25, 2e-3);
  EXPECT_EQ(c.samples(), 40u);
  EXPECT_EQ(c.write_samples(), 40u);
}

TEST(RateCalibrator, EachKindMovesByTheWeightFromItsPrior) {
  RateCalibrator c(11 * kGiBf, milliseconds(50), 0.25, 1.0);
  TimePoint now{};
  alone(c, now, 1.0 * kGiBf, 0);
  // (to a nanosecond of device time)
  EXPECT_NEAR(c.bytes_per_s() / (11 * kGiBf + 0.25 * (kRead - 11 * kGiBf)), 1.0, 1e-8);
  EXPECT_DOUBLE_EQ(c.write_cost(), c.bytes_per_s() / (11 * kGiBf));  // writes: still the prior
  alone(c, now, 0, 0.5 * kGiBf);
  EXPECT_NEAR(c.write_cost() / (c.bytes_per_s() / (11 * kGiBf + 0.25 * (kWrite - 11 * kGiBf))), 1.0,
              1e-8);
}

// The writes in flight while reads are, time-averaged over read-busy samples: 40 x (a read and a
// write together, then the longer of them alone) on the 9 / 4 GiB/s device.
TEST(RateCalibrator, LearnsHowManyWritesAreInFlightWhileReading) {
  RateCalibrator c(11 * kGiBf, milliseconds(50), 1.0, 1.0);
  TimePoint now{};
  EXPECT_EQ(c.writes_while_reading(), 0.0);
  // The read (0.6 GiB: 66.7 ms alone) outlasts the write (0.1 GiB: 25 ms): one write for the
  // first 50 ms of its 91.7 ms in flight.
  for (int i = 0; i < 40; ++i) together(c, now, 0.6 * kGiBf, 0.1 * kGiBf);
  EXPECT_NEAR(c.writes_while_reading(), 50.0 / 91.67, 1e-3);
  // Writes alone say nothing of it; reads alone bring it to 0.
  alone(c, now, 0, 0.5 * kGiBf);
  EXPECT_NEAR(c.writes_while_reading(), 50.0 / 91.67, 1e-3);
  alone(c, now, 1.0 * kGiBf, 0);
  EXPECT_EQ(c.writes_while_reading(), 0.0);
}

TEST(RateCalibrator, WritesNotSeenLeaveTheCostAtZero) {
  RateCalibrator c(11 * kGiBf, milliseconds(50), 0.25, 0.0);
  TimePoint now{};
  alone(c, now, 0, 0.5 * kGiBf);
  EXPECT_EQ(c.write_cost(), 0.0);
  EXPECT_EQ(c.write_samples(), 0u);
  alone(c, now, 1.0 * kGiBf, 0);
  EXPECT_EQ(c.samples(), 1u);
}

TEST(RateCalibrator, ASampleClosesOnlyOnceItsKindHadASampleOfDeviceTime) {
  RateCalibrator c(11 * kGiBf, milliseconds(50), 1.0, 1.0);
  TimePoint now{};
  // 30 ms of reads: below one sample, the rate stays the prior; the next 30 ms close it.
  alone(c, now, 0.03 * kRead, 0);
  EXPECT_EQ(c.samples(), 0u);
  EXPECT_DOUBLE_EQ(c.bytes_per_s(), 11 * kGiBf);
  alone(c, now, 0.03 * kRead, 0);
  EXPECT_EQ(c.samples(), 1u);
  EXPECT_NEAR(c.bytes_per_s() / kRead, 1.0, 1e-6);
}

}  // namespace
}  // namespace tempokv::testing
