// Power loss: the store runs on a FaultInjectingEngine in power-loss mode (a page-cache model that
// forgets, page by page and sector by sector, every record write the engine's own syncs did not
// make durable) and on PowerLossFiles for its directory (a create, rename or unlink survives only
// when a directory sync made it durable, else as part of an ordered prefix; segment headers as
// the records). The power is cut at a random engine request or file operation: while puts large
// (zero-copy) and small are written, segments roll and are reclaimed, and while a writer's open
// quarantines a damaged segment. The store is then reopened on plain I/O. Every acknowledged put
// and remove must hold (except objects reclaimed or damaged on purpose), every object listed must
// read back byte-exact (nothing torn served), and verify must find nothing corrupt. It runs on a
// real file system directory, in two shards of TEMPOKV_POWER_ITERATIONS cuts each (default 1000;
// they run side by side under ctest, waiting on real syncs) from TEMPOKV_POWER_SEED; scripts/
// crash-soak power runs it longer.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "store/power_loss_files.h"
#include "store_test_util.h"

namespace tempokv::testing {
namespace {

std::string fast_parent() {
  return std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/var/tmp";
}

StoreOptions power_options(const std::string& dir) {
  StoreOptions o;
  o.dir = dir;
  o.segment_bytes = 512 * kKiB;  // rolls every few puts
  o.capacity_bytes = 3 * kMiB;   // six segments: reclaims every few iterations
  o.max_object_bytes = 160 * kKiB;
  return o;
}

// Small (copied with the header), page-spanning, and large zero-copy payloads.
size_t object_bytes(uint64_t i) {
  uint64_t s = i * 7919;
  const uint64_t r = splitmix64(s);
  switch (i % 5) {
    case 0:
      return 16 * kKiB;
    case 1:
      return 64 * kKiB + r % (96 * kKiB);  // zero-copy (4 KiB-aligned buffers below)
    default:
      return 1 + r % (20 * kKiB);
  }
}

std::unique_ptr<SsdEngine> buffered_engine(RealExecutor& ex) {
  SsdEngineOptions eo;
  eo.kind = SsdEngineKind::kThreadPool;
  eo.direct = false;
  eo.threads = 2;
  return std::move(make_ssd_engine(ex, eo)).value();
}

// Puts (and every fourth op a remove of an earlier key) with 4 in flight until the power is cut
// or the ops run out. Acknowledgements land in the sets; payloads stay alive (and aligned) until
// their put completes, as the store's zero-copy path needs.
struct Writer {
  StoreHarness& h;
  std::function<bool()> crashed;
  uint64_t next;
  uint64_t end;
  std::set<uint64_t>& acked_puts;
  std::set<uint64_t>& acked_removes;
  std::map<uint64_t, AlignedBuffer> payloads;
  std::set<uint64_t> removed;  // keys a remove was issued for
  int in_flight = 0;

  void issue() {
    if (crashed() || next >= end) return;
    uint64_t i = next++;
    ++in_flight;
    if (i % 4 == 3) {
      // Until the remove is acknowledged either state is allowed, even if the put's
      // acknowledgement comes later (the remove's record still has the higher sequence).
      acked_puts.erase(i - 2);
      removed.insert(i - 2);
      h.store->remove(test_key(i - 2), [this, k = i - 2](Status st) {
        if (st.is_ok()) acked_removes.insert(k);
        --in_flight;
        issue();
      });
      return;
    }
    AlignedBuffer& buf = payloads[i] = std::move(AlignedBuffer::allocate(object_bytes(i))).value();
    fill_payload(i, buf.data(), object_bytes(i));
    h.store->put(test_key(i), {0, 256}, buf.data(), object_bytes(i), [this, i](Status st) {
      if (st.is_ok() && !removed.count(i)) acked_puts.insert(i);
      --in_flight;
      issue();
    });
  }
};

// Flips a byte of the header of the oldest segment file: the next writer's open quarantines it.
// Returns the keys whose objects were in it (lost on purpose); *path is the file.
std::set<uint64_t> damage_oldest_segment(const std::string& dir,
                                         const std::vector<ObjectInfo>& objs, std::string* path) {
  std::optional<uint32_t> oldest;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    auto id = store::parse_segment_file_name(e.path().filename().string());
    if (id && (!oldest || *id < *oldest)) oldest = id;
  }
  std::set<uint64_t> lost;
  if (!oldest) return lost;
  *path = dir + "/" + store::segment_file_name(*oldest);
  flip_bytes(*path, 16);  // the segment id field
  for (const ObjectInfo& o : objs) {
    if (o.segment == *oldest) lost.insert(o.key.hash);
  }
  return lost;
}

class StorePowerLossShard : public ::testing::TestWithParam<uint64_t> {};

TEST_P(StorePowerLossShard, AcknowledgedWritesSurviveAndNothingTornIsServed) {
  const uint64_t iterations = env_or("TEMPOKV_POWER_ITERATIONS", 1000);
  std::mt19937_64 rng(env_or("TEMPOKV_POWER_SEED", 20261201) + 7919 * GetParam());
  std::unique_ptr<TempDir> dir;
  std::set<uint64_t> acked_puts, acked_removes;
  std::vector<ObjectInfo> listed;  // what the last reopen found
  std::string damaged;  // a segment damaged on purpose, until a writer's open quarantines it
  uint64_t pages_lost = 0, pages_torn = 0, names_undone = 0, names_kept = 0, sync_failures = 0;
  uint64_t objects_checked = 0, reclaimed = 0, quarantines = 0, cuts_in_files = 0;
  for (uint64_t iter = 0; iter < iterations; ++iter) {
    SCOPED_TRACE("iteration " + std::to_string(iter));
    if (iter % 8 == 0) {  // crashes pile up in one directory, then start afresh
      dir = std::make_unique<TempDir>();
      ASSERT_FALSE(dir->path().empty());
      acked_puts.clear();
      acked_removes.clear();
      listed.clear();
    }
    if (iter % 8 == 5 && !listed.empty()) {  // the next open quarantines a damaged segment
      for (uint64_t k : damage_oldest_segment(dir->path(), listed, &damaged)) acked_puts.erase(k);
      acked_removes.clear();  // its tombstones go with it: removed keys may come back
      ++quarantines;
    }
    StoreHarness h;
    auto faults_owned = std::make_unique<FaultInjectingEngine>(h.ex, buffered_engine(h.ex), rng());
    FaultInjectingEngine& faults = *faults_owned;
    faults.enable_power_loss(rng());
    store::PowerLossFiles files(rng());
    files.set_also_crashed([&faults] { return faults.crashed(); });
    files.set_crash_listener([&faults] { faults.crash(); });
    if (rng() % 6 == 0) {  // a failed fdatasync somewhere in the run
      faults.add_rule({.ops = FaultInjectingEngine::kSyncs, .skip = rng() % 4, .count = 1});
      ++sync_failures;
    }
    if (rng() % 3 == 0) {
      files.crash_after_ops(1 + rng() % 12);  // in a file operation: open, roll, reclaim
      ++cuts_in_files;
    } else {
      faults.crash_after_requests(1 + rng() % 64);
    }
    StoreOptions o = power_options(dir->path());
    o.file_ops = &files;
    Status opened = h.start_with(o, std::move(faults_owned));
    if (opened.is_ok()) {
      std::set<Key> evicted;
      h.store->set_eviction_listener([&](const Key& k) { evicted.insert(k); });
      uint64_t first = (iter + 1) * 1000;
      Writer w{h, [&] { return faults.crashed(); }, first, first + 32, acked_puts, acked_removes,
               {}, {}};
      for (int k = 0; k < 4; ++k) w.issue();
      ASSERT_TRUE(run_until(h.ex, [&] { return w.in_flight == 0; }));
      faults.crash();  // if the countdowns outlived the ops, the power goes now
      ASSERT_TRUE(h.close().is_ok());
      for (const Key& k : evicted) acked_puts.erase(k.hash);  // reclaimed: may come back or not
      reclaimed += evicted.size();
    } else {
      ASSERT_TRUE(files.crashed()) << "open failed without a cut: " << opened.to_string();
      faults.crash();
    }
    auto cut = faults.power_cut();
    ASSERT_TRUE(cut.is_ok()) << cut.status().to_string();
    auto names = files.power_cut();
    ASSERT_TRUE(names.is_ok()) << names.status().to_string();
    pages_lost += cut->pages_lost + names->pages_lost;
    pages_torn += cut->pages_torn + names->pages_torn;
    names_undone += names->names_undone;
    names_kept += names->names_kept;

    auto report = verify_store_dir(dir->path());
    ASSERT_TRUE(report.is_ok()) << report.status().to_string();
    // The one corrupt header allowed is the one damaged on purpose, if the cut came before the
    // quarantine was durable (the reopen below quarantines it).
    const bool damaged_there = !damaged.empty() && std::filesystem::exists(damaged);
    ASSERT_EQ(report->corrupt, damaged_there ? 1u : 0u)
        << (report->problems.empty() ? "" : report->problems[0]);
    damaged.clear();
    StoreHarness after;
    Status reopened = after.start_with(power_options(dir->path()), buffered_engine(after.ex));
    ASSERT_TRUE(reopened.is_ok()) << reopened.to_string();
    listed = after.store->list();
    for (const ObjectInfo& info : listed) {
      uint64_t i = info.key.hash;
      ASSERT_EQ(info.payload_bytes, object_bytes(i)) << "key " << i;
      ASSERT_TRUE(after.check_seeded(i, object_bytes(i)));
      ++objects_checked;
    }
    for (uint64_t i : acked_puts)
      ASSERT_TRUE(after.store->contains(test_key(i))) << "lost put " << i;
    for (uint64_t i : acked_removes) {
      ASSERT_FALSE(after.store->contains(test_key(i))) << "remove of " << i << " undone";
    }
  }
  EXPECT_GT(pages_lost + pages_torn, 0u) << "the model never forgot anything";
  EXPECT_GT(names_undone, 0u) << "no file operation was ever undone";
  EXPECT_GT(reclaimed, 0u) << "no cut came near a reclamation";
  std::printf(
      "power-loss test: %llu crashes (%llu in a file operation), %llu objects checked, %llu pages "
      "lost, %llu torn, %llu names undone, %llu kept unsynced, %llu objects reclaimed, %llu "
      "quarantines, %llu runs with a failed sync\n",
      static_cast<unsigned long long>(iterations), static_cast<unsigned long long>(cuts_in_files),
      static_cast<unsigned long long>(objects_checked), static_cast<unsigned long long>(pages_lost),
      static_cast<unsigned long long>(pages_torn), static_cast<unsigned long long>(names_undone),
      static_cast<unsigned long long>(names_kept), static_cast<unsigned long long>(reclaimed),
      static_cast<unsigned long long>(quarantines),
      static_cast<unsigned long long>(sync_failures));
}

INSTANTIATE_TEST_SUITE_P(Shards, StorePowerLossShard, ::testing::Values(0, 1));

TEST(StorePowerLossTest, FailedSyncFailsThePutsItCoveredAndTheStoreStaysConsistent) {
  TempDir dir(fast_parent());
  StoreHarness h;
  auto owned = std::make_unique<FaultInjectingEngine>(h.ex, buffered_engine(h.ex), 7);
  FaultInjectingEngine& faults = *owned;
  faults.enable_power_loss(7);
  ASSERT_TRUE(h.start_with(power_options(dir.path()), std::move(owned)).is_ok());
  ASSERT_TRUE(h.put_seeded(1, 5000).is_ok());
  faults.fail_next_syncs(1);
  Status failed = h.put_seeded(2, 5000);
  EXPECT_EQ(failed.code(), StatusCode::kIOError) << failed.to_string();
  EXPECT_FALSE(h.store->contains(test_key(2)));
  EXPECT_EQ(h.store->stats().failed_puts, 1u);
  ASSERT_TRUE(h.put_seeded(3, 5000).is_ok());  // the store goes on, in a fresh segment
  EXPECT_NE(h.store->lookup(test_key(3))->segment, h.store->lookup(test_key(1))->segment);
  EXPECT_GE(faults.faults_injected(), 1u);
  faults.crash();
  ASSERT_TRUE(h.close().is_ok());
  ASSERT_TRUE(faults.power_cut().is_ok());
  auto report = verify_store_dir(dir.path());
  ASSERT_TRUE(report.is_ok());
  EXPECT_EQ(report->corrupt, 0u);
  StoreHarness after;
  ASSERT_TRUE(after.start_with(power_options(dir.path()), buffered_engine(after.ex)).is_ok());
  EXPECT_TRUE(after.check_seeded(1, 5000));
  EXPECT_TRUE(after.check_seeded(3, 5000));
  if (after.store->contains(test_key(2))) {
    EXPECT_TRUE(after.check_seeded(2, 5000));  // unacknowledged, but whole if there at all
  }
}

TEST(StorePowerLossTest, ARecordWrittenAcrossAFailedSyncIsNeverAcknowledged) {
  // A failed fdatasync may drop pages written before it, and the next one succeeds without them
  // (their pages are clean again). A large record whose header was written before the failed
  // sync and whose body after it must fail, not be acknowledged by the next sync.
  TempDir dir;
  StoreHarness h;
  auto owned = std::make_unique<FaultInjectingEngine>(h.ex, buffered_engine(h.ex), 11);
  FaultInjectingEngine& faults = *owned;
  ASSERT_TRUE(h.start_with(power_options(dir.path()), std::move(owned)).is_ok());
  ASSERT_TRUE(h.put_seeded(1, 5000).is_ok());
  const uint64_t body_at = h.store->lookup(test_key(1))->offset + 8 * kKiB;  // the next record's
  faults.add_rule({.ops = FaultInjectingEngine::kWrites,
                   .offset_begin = body_at + kKiB,  // its body, not its header
                   .count = 1,
                   .action = FaultInjectingEngine::Action::kDelay,
                   .delay = std::chrono::milliseconds(100)});
  auto big = std::move(AlignedBuffer::allocate(100 * kKiB)).value();
  fill_payload(2, big.data(), 100 * kKiB);
  std::optional<Status> second, third;
  h.store->put(test_key(2), {0, 256}, big.data(), 100 * kKiB, [&](Status st) { second = st; });
  faults.fail_next_syncs(1);
  auto small = payload(3, 3000);
  h.store->put(test_key(3), {0, 256}, small.data(), small.size(), [&](Status st) { third = st; });
  ASSERT_TRUE(run_until(h.ex, [&] { return second.has_value() && third.has_value(); }));
  EXPECT_FALSE(third->is_ok()) << "the failed sync's own record";
  EXPECT_EQ(second->code(), StatusCode::kIOError)
      << "a record part of which the failed sync covered was acknowledged: " << second->to_string();
  EXPECT_FALSE(h.store->contains(test_key(2)));
}

}  // namespace
}  // namespace tempokv::testing
