// get()'s payload checksum runs on the engine's hook threads (SsdEngineOptions::hook_threads), not
// on the thread that reaps and resubmits reads. Through that path a corrupt payload is still caught
// and reported, whichever of several objects completing together it is, and is never served; and
// closing the store while verifications are held up loses no read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "executor/work_gate.h"
#include "store/store_test_util.h"

namespace tempokv::testing {
namespace {

constexpr size_t kBytes = 64 * kKiB;

class StoreVerifyTest : public ::testing::Test {
 protected:
  // A store on an io_uring engine with `hook_threads` hook threads (0: the engine's default),
  // holding objects 0..n-1 of kBytes, then the payloads of `corrupt` flipped on disk.
  void start(uint32_t hook_threads, uint64_t n, const std::vector<uint64_t>& corrupt) {
    ASSERT_FALSE(dir_.path().empty());
    if (!dir_.supports_direct()) GTEST_SKIP() << dir_.path() << " does not support O_DIRECT";
    StoreOptions o = small_options(dir_.path());
    o.on_io_thread_for_testing = [this](std::string_view what) { gate_.arrive(what); };
    SsdEngineOptions eo;
    if (hook_threads > 0) eo.hook_threads = hook_threads;
    auto engine = make_ssd_engine(h_.ex, eo);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    ASSERT_TRUE(h_.start_with(o, std::move(engine).value()).is_ok());
    for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE(h_.put_seeded(i, kBytes).is_ok());
    for (uint64_t i : corrupt) {
      ObjectInfo info = *h_.store->lookup(test_key(i));
      flip_bytes(dir_.path() + "/" + store::segment_file_name(info.segment), info.offset + 4000);
    }
    for (uint64_t i = 0; i < n; ++i) {
      auto b = AlignedBuffer::allocate(kBytes);
      ASSERT_TRUE(b.is_ok());
      bufs_.push_back(std::move(b).value());
    }
    results_.resize(n);
  }
  // Issues get(i) for every object at once, in one turn of the loop.
  void get_all() {
    for (size_t i = 0; i < results_.size(); ++i) {
      h_.store->get(test_key(i), bufs_[i].data(), bufs_[i].size(), [this, i](Result<size_t> r) {
        EXPECT_FALSE(results_[i].has_value()) << "get " << i << " answered twice";
        results_[i] = std::move(r);
      });
    }
  }
  bool all_answered() const {
    for (const auto& r : results_) {
      if (!r) return false;
    }
    return true;
  }
  // Every get answered: the corrupt ones with Corruption (and dropped), the others with their
  // exact bytes.
  void expect_results(const std::vector<uint64_t>& corrupt) {
    for (uint64_t i = 0; i < results_.size(); ++i) {
      ASSERT_TRUE(results_[i].has_value()) << "get " << i << " never answered";
      bool bad = std::find(corrupt.begin(), corrupt.end(), i) != corrupt.end();
      if (bad) {
        EXPECT_EQ(results_[i]->status().code(), StatusCode::kCorruption) << "object " << i;
        EXPECT_FALSE(h_.store->contains(test_key(i))) << "object " << i << " still claimable";
      } else {
        ASSERT_TRUE(results_[i]->is_ok())
            << "object " << i << ": " << results_[i]->status().to_string();
        EXPECT_EQ(**results_[i], kBytes);
        auto want = payload(i, kBytes);
        EXPECT_EQ(std::memcmp(bufs_[i].data(), want.data(), kBytes), 0) << "object " << i;
      }
    }
    StoreStats s = h_.store->stats();
    EXPECT_EQ(s.checksum_failures, corrupt.size());
    EXPECT_EQ(s.dropped_records, corrupt.size());
    EXPECT_EQ(s.gets, results_.size() - corrupt.size());
  }

  TempDir dir_;
  Gate gate_;  // before h_: the engine's hook threads may still call it while h_ closes
  StoreHarness h_;
  std::vector<AlignedBuffer> bufs_;
  std::vector<std::optional<Result<size_t>>> results_;
};

TEST_F(StoreVerifyTest, ObjectsVerifiedTogetherFailOnlyWhereCorruptNotFirst) {
  // Eight hook threads: all eight reads complete and wait in their verification at once, then
  // verify together; the corrupt ones are the third and the sixth.
  const std::vector<uint64_t> corrupt = {2, 5};
  ASSERT_NO_FATAL_FAILURE(start(8, 8, corrupt));
  if (IsSkipped()) return;
  gate_.hold("verify");
  get_all();
  ASSERT_TRUE(run_ticking(h_.ex, [&] { return gate_.waiting() == 8; }))
      << "only " << gate_.waiting() << " verifications in flight together";
  EXPECT_EQ(h_.engine->stats().in_flight, 8u) << "a get completed before its verification";
  gate_.open();
  ASSERT_TRUE(run_until(h_.ex, [&] { return all_answered(); }));
  expect_results(corrupt);
}

TEST_F(StoreVerifyTest, ManyGetsAtOnceOnTheDefaultPoolFailOnlyWhereCorrupt) {
  const std::vector<uint64_t> corrupt = {3, 9, 14};
  ASSERT_NO_FATAL_FAILURE(start(0, 16, corrupt));
  if (IsSkipped()) return;
  get_all();
  ASSERT_TRUE(run_until(h_.ex, [&] { return all_answered(); }));
  expect_results(corrupt);
  EXPECT_GE(gate_.count("verify"), 16);
}

TEST_F(StoreVerifyTest, CloseWhileVerificationsAreHeldLosesNoReadAndServesNoCorruptOne) {
  const std::vector<uint64_t> corrupt = {2};
  ASSERT_NO_FATAL_FAILURE(start(4, 4, corrupt));
  if (IsSkipped()) return;
  gate_.hold("verify");
  get_all();
  ASSERT_TRUE(run_ticking(h_.ex, [&] { return gate_.waiting() == 4; }));
  std::optional<Status> closed;
  h_.store->close([&](Status st) { closed = st; });
  // The loop runs while the verifications are held: nothing is answered, the close waits.
  int ticks = 0;
  std::function<void()> tick = [&] {
    if (++ticks < 20) h_.ex.after(std::chrono::milliseconds(1), tick);
  };
  h_.ex.after(std::chrono::milliseconds(1), tick);
  ASSERT_TRUE(run_until(h_.ex, [&] { return ticks >= 20; }));
  EXPECT_FALSE(closed.has_value()) << "the store closed with verifications in flight";
  for (const auto& r : results_) EXPECT_FALSE(r.has_value()) << "answered before its verification";
  gate_.open();
  ASSERT_TRUE(run_until(h_.ex, [&] { return closed.has_value(); }));
  EXPECT_TRUE(closed->is_ok()) << closed->to_string();
  expect_results(corrupt);
  h_.store.reset();
  // Reopened: every good object is there and intact; the corrupt one is never served.
  ASSERT_TRUE(h_.reopen().is_ok());
  for (uint64_t i : {0, 1, 3}) EXPECT_TRUE(h_.check_seeded(i, kBytes));
  if (h_.store->contains(test_key(2))) {
    EXPECT_EQ(h_.get(test_key(2), bufs_[2].data(), bufs_[2].size()).status().code(),
              StatusCode::kCorruption);
  }
}

}  // namespace
}  // namespace tempokv::testing
