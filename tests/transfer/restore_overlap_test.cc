// The direct path keeps `depth` reads in flight while device copies are outstanding; the
// baselines hold a slot from its read through its copy (a naive backend's loop). A transfer
// engine that holds every copy until the test lets it go shows which.
#include <cstring>
#include <deque>

#include "restore_test_util.h"
#include "transfer/restore_verify.h"

namespace tempokv::testing {
namespace {

// Passes everything to `inner`, except that device copies wait in `held` until release_one().
class HeldCopies final : public TransferEngine {
 public:
  explicit HeldCopies(TransferEngine& inner) : inner_(inner) {}
  std::string_view name() const override { return "held"; }
  DeviceKind device_kind() const override { return inner_.device_kind(); }
  std::string device_description() const override { return "held"; }
  Result<std::unique_ptr<DeviceBuffer>> allocate(size_t bytes) override {
    return inner_.allocate(bytes);
  }
  Status register_host(void* base, size_t bytes) override {
    return inner_.register_host(base, bytes);
  }
  void unregister_host(void* base) override { inner_.unregister_host(base); }
  void copy_to_device(const void* src, DeviceBuffer& dst, uint64_t dst_offset, size_t bytes,
                      CopyCallback cb) override {
    held.push_back([=, this, &dst, cb = std::move(cb)]() mutable {
      inner_.copy_to_device(src, dst, dst_offset, bytes, std::move(cb));
    });
  }
  Status copy_to_host(const DeviceBuffer& src, uint64_t src_offset, void* dst,
                      size_t bytes) override {
    return inner_.copy_to_host(src, src_offset, dst, bytes);
  }
  TransferStats stats() const override { return inner_.stats(); }
  void release_one() {
    auto copy = std::move(held.front());
    held.pop_front();
    copy();
  }
  std::deque<std::function<void()>> held;

 private:
  TransferEngine& inner_;
};

class RestoreOverlapTest : public RestoreFixture {
 protected:
  // Starts a restore of eight 64 KiB chunks by `name` at `depth` with every copy held, and
  // returns how many reads it issued before it had to wait for a copy; then lets the copies go
  // and checks the restore completes byte-exact.
  uint64_t reads_before_a_copy_completes(const std::string& name, uint32_t depth) {
    auto keys = put_session(std::vector<size_t>(8, 64 * 1024));
    auto session = RestoreSession::resolve(*store_, keys);
    EXPECT_TRUE(session.is_ok()) << session.status().to_string();
    if (!session.is_ok()) return 0;
    HeldCopies transfer(*transfer_);
    auto ssd = engine_for(name);
    std::unique_ptr<RestorePath> path;
    RestorePathOptions o{64 * 1024, depth};
    if (name == "direct") path = make_direct_restore_path(executor_, *ssd, transfer, o);
    else path = make_odirect_bounce_restore_path(executor_, *ssd, transfer, o);
    EXPECT_TRUE(path->prepare().is_ok());
    auto dst = transfer_->allocate(session->device_bytes()).value();
    bool done = false;
    Result<uint64_t> result = Status::internal("restore did not complete");
    path->restore(*session, *dst, [&](Result<uint64_t> r) {
      result = std::move(r);
      done = true;
    });
    // Every read the path may issue has completed and waits for its copy (a second of quiet
    // after the last one).
    size_t seen = 0;
    for (int quiet = 0; quiet < 10;) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
      executor_.after(std::chrono::milliseconds(100), [] {});
      executor_.run_until([&] { return std::chrono::steady_clock::now() >= until; });
      quiet = transfer.held.size() == seen ? quiet + 1 : 0;
      seen = transfer.held.size();
    }
    const uint64_t reads = path->stats().reads;
    EXPECT_EQ(transfer.held.size(), reads) << "every issued read completed and waits for a copy";
    while (!done) {
      if (!transfer.held.empty()) transfer.release_one();
      EXPECT_TRUE(run_until([&] { return done || !transfer.held.empty(); }));
    }
    EXPECT_TRUE(result.is_ok()) << result.status().to_string();
    EXPECT_TRUE(verify_restored(*session, *dst, *transfer_).is_ok());
    path->release();
    return reads;
  }
};

TEST_F(RestoreOverlapTest, DirectReadsAheadOfHeldCopies) {
  // depth 2: two reads in flight, and spare slots (as many as depth, at least 2) for pieces whose
  // copy is outstanding, so four pieces are read before any copy completes.
  EXPECT_EQ(reads_before_a_copy_completes("direct", 2), 4u);
}

TEST_F(RestoreOverlapTest, TheNaiveBaselineWaitsForEachCopy) {
  EXPECT_EQ(reads_before_a_copy_completes("odirect-bounce", 1), 1u);
}

}  // namespace
}  // namespace tempokv::testing
