// The fault-injecting wrapper, over the simulated engine (exact times) and over a real one.
#include "ssd/fault_injecting_engine.h"

#include <gtest/gtest.h>

#include "common/aligned_buffer.h"
#include "common/units.h"
#include "executor/sim_executor.h"
#include "ssd/sim_ssd_engine.h"
#include "ssd/ssd_test_util.h"

namespace tempokv {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

class FaultInjectingEngineTest : public ::testing::Test {
 protected:
  explicit FaultInjectingEngineTest(uint64_t seed = 1) {
    options_.kind = SsdEngineKind::kSimulated;
    options_.sim_latency = microseconds(100);
    options_.sim_read_bytes_per_s = 4096.0 * 1000;  // one 4 KiB block per ms
    options_.sim_write_bytes_per_s = 4096.0 * 1000;
    options_.sim_max_concurrency = 1024;
    engine_ = std::make_unique<FaultInjectingEngine>(
        ex_, std::make_unique<SimSsdEngine>(ex_, options_), seed);
    file_ = *engine_->add_file(-1);
  }
  struct Outcome {
    Result<size_t> result = Status::internal("not completed");
    TimePoint when{};
  };
  std::vector<Outcome> run_reads(int n, size_t len = 4096, uint64_t offset = 0) {
    std::vector<Outcome> out(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      engine_->read(file_, offset, nullptr, len, [this, &out, i](Result<size_t> r) {
        out[static_cast<size_t>(i)] = Outcome{std::move(r), ex_.now()};
      });
    }
    ex_.run();
    return out;
  }
  Outcome run_write(size_t len, uint64_t offset = 0) {
    Outcome out;
    engine_->write(file_, offset, nullptr, len, [&](Result<size_t> r) {
      out = Outcome{std::move(r), ex_.now()};
    });
    ex_.run();
    return out;
  }

  SsdEngineOptions options_;
  SimExecutor ex_;
  std::unique_ptr<FaultInjectingEngine> engine_;
  FileId file_ = 0;
};

TEST_F(FaultInjectingEngineTest, NthReadFailsWithIoErrorAndTheOthersSucceed) {
  engine_->fail_nth_read(3);
  auto out = run_reads(5);
  for (size_t i = 0; i < out.size(); ++i) {
    if (i == 2) {
      EXPECT_EQ(out[i].result.status().code(), StatusCode::kIOError);
      EXPECT_NE(out[i].result.status().message().find("injected fault: sim read of file 0"),
                std::string::npos)
          << out[i].result.status().message();
    } else {
      EXPECT_TRUE(out[i].result.is_ok()) << i;
    }
  }
  EXPECT_EQ(engine_->faults_injected(), 1u);
  SsdEngineStats s = engine_->stats();
  EXPECT_EQ(s.reads, 5u);
  EXPECT_EQ(s.errors, 1u);
}

TEST_F(FaultInjectingEngineTest, FailNextReadsFailsThatManyThenRecovers) {
  engine_->fail_next_reads(2);
  auto out = run_reads(4);
  EXPECT_FALSE(out[0].result.is_ok());
  EXPECT_FALSE(out[1].result.is_ok());
  EXPECT_TRUE(out[2].result.is_ok());
  EXPECT_TRUE(out[3].result.is_ok());
}

TEST_F(FaultInjectingEngineTest, WritesPastTheByteBudgetFailWithResourceExhausted) {
  engine_->fail_writes_after_bytes(8192);
  EXPECT_TRUE(run_write(4096).result.is_ok());
  EXPECT_TRUE(run_write(4096).result.is_ok());
  Outcome third = run_write(4096);
  EXPECT_EQ(third.result.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(run_write(4096).result.status().code(), StatusCode::kResourceExhausted);
}

TEST_F(FaultInjectingEngineTest, ShortTransferReportsFewerBytesOnce) {
  engine_->short_transfer_next(1);
  auto out = run_reads(2, 8192);
  ASSERT_TRUE(out[0].result.is_ok());
  EXPECT_EQ(*out[0].result, 4096u);
  ASSERT_TRUE(out[1].result.is_ok());
  EXPECT_EQ(*out[1].result, 8192u);
}

TEST_F(FaultInjectingEngineTest, DelayAddsExactlyItsTimeBeforeTheRequestStarts) {
  engine_->add_delay(milliseconds(5));
  auto out = run_reads(1);
  ASSERT_TRUE(out[0].result.is_ok());
  // 5 ms delay, then 100 us latency, then 1 ms for the block.
  EXPECT_EQ(out[0].when, TimePoint(milliseconds(6) + microseconds(100)));
}

TEST_F(FaultInjectingEngineTest, DelayedErrorArrivesAfterTheDelay) {
  engine_->add_delay(milliseconds(2));
  engine_->fail_next_syncs(1, EIO);
  Outcome out;
  engine_->sync(file_, [&](Result<size_t> r) { out = Outcome{std::move(r), ex_.now()}; });
  EXPECT_EQ(engine_->stats().in_flight, 1u);
  ex_.run();
  EXPECT_EQ(out.result.status().code(), StatusCode::kIOError);
  EXPECT_EQ(out.when, TimePoint(milliseconds(2)));
}

TEST_F(FaultInjectingEngineTest, ReadsOverlappingTheRangeOfTheFileFail) {
  FileId other = *engine_->add_file(-1);
  engine_->fail_reads_in_range(file_, 8192, 16384);
  std::vector<StatusCode> got(4);
  auto rec = [&](size_t i) { return [&, i](Result<size_t> r) { got[i] = r.status().code(); }; };
  engine_->read(file_, 0, nullptr, 8192, rec(0));      // ends where the range begins
  engine_->read(file_, 4096, nullptr, 8192, rec(1));   // overlaps its start
  engine_->read(file_, 16384, nullptr, 4096, rec(2));  // starts where it ends
  engine_->read(other, 8192, nullptr, 4096, rec(3));   // another file
  ex_.run();
  EXPECT_EQ(got, (std::vector<StatusCode>{StatusCode::kOk, StatusCode::kIOError, StatusCode::kOk,
                                          StatusCode::kOk}));
}

TEST_F(FaultInjectingEngineTest, ClearRemovesEveryRule) {
  engine_->fail_next_reads(10);
  engine_->add_delay(milliseconds(1));
  engine_->clear();
  auto out = run_reads(1);
  EXPECT_TRUE(out[0].result.is_ok());
  EXPECT_EQ(out[0].when, TimePoint(milliseconds(1) + microseconds(100)));
}

std::vector<bool> failure_pattern(uint64_t seed, double p, int n) {
  SimExecutor ex;
  SsdEngineOptions o;
  FaultInjectingEngine engine(ex, std::make_unique<SimSsdEngine>(ex, o), seed);
  FileId f = *engine.add_file(-1);
  engine.set_read_error_probability(p);
  std::vector<bool> failed(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    engine.read(f, 0, nullptr, 4096,
                [&failed, i](Result<size_t> r) { failed[static_cast<size_t>(i)] = !r.is_ok(); });
  }
  ex.run();
  return failed;
}

TEST(FaultInjectingEngineProbability, SameSeedGivesTheSameFailures) {
  auto a = failure_pattern(42, 0.25, 400);
  EXPECT_EQ(a, failure_pattern(42, 0.25, 400));
  EXPECT_NE(a, failure_pattern(43, 0.25, 400));
  auto failures = std::count(a.begin(), a.end(), true);
  EXPECT_GT(failures, 50);  // about 100 expected
  EXPECT_LT(failures, 150);
  auto none = failure_pattern(42, 0.0, 100);
  EXPECT_EQ(std::count(none.begin(), none.end(), true), 0);
}

TEST(FaultInjectingEngineReal, InjectsEioOverTheThreadPoolEngine) {
  testing::TempFile file(false);
  ASSERT_GE(file.fd(), 0) << file.error();
  RealExecutor ex;
  SsdEngineOptions o;
  o.kind = SsdEngineKind::kThreadPool;
  o.threads = 2;
  auto inner = make_ssd_engine(ex, o);
  ASSERT_TRUE(inner.is_ok());
  FaultInjectingEngine engine(ex, std::move(inner).value());
  FileId f = *engine.add_file(file.fd());
  auto buf = AlignedBuffer::allocate(8192);
  ASSERT_TRUE(buf.is_ok());
  engine.fail_next_writes(1, ENOSPC);
  std::vector<Result<size_t>> got;
  auto rec = [&](Result<size_t> r) { got.push_back(std::move(r)); };
  engine.write(f, 0, buf->data(), 8192, rec);
  ASSERT_TRUE(testing::run_until(ex, [&] { return got.size() == 1; }));
  engine.write(f, 0, buf->data(), 8192, rec);
  ASSERT_TRUE(testing::run_until(ex, [&] { return got.size() == 2; }));
  EXPECT_EQ(got[0].status().code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(got[1].is_ok()) << got[1].status().to_string();
  EXPECT_EQ(*got[1], 8192u);
}

}  // namespace
}  // namespace tempokv
