// Helpers for the restore tests: a store in a temporary, disk-backed directory on a RealExecutor,
// chunks written with known bytes, the SSD engine each path reads through, and a blocking
// restore (bounded, so a hang fails the test instead of stalling it).
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/units.h"
#include "executor/real_executor.h"
#include "ssd/ssd_engine.h"
#include "store/store.h"
#include "transfer/restore_path.h"
#include "transfer/transfer_engine.h"

namespace tempokv::testing {

inline std::vector<uint8_t> chunk_bytes(uint64_t seed, size_t n) {
  std::vector<uint8_t> v(n);
  uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 7;
  for (auto& b : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    b = uint8_t(s);
  }
  return v;
}

class RestoreFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/var/tmp/tempokv-restore-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    int fd = ::open((dir_ + "/.probe").c_str(), O_CREAT | O_RDWR | O_DIRECT, 0644);
    if (fd < 0) GTEST_SKIP() << "no O_DIRECT in " << dir_;
    ::close(fd);
    auto engine = make_ssd_engine(executor_, SsdEngineOptions{});
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    store_engine_ = std::move(engine).value();
    StoreOptions o;
    o.dir = dir_;
    o.segment_bytes = 4 * kMiB;
    o.capacity_bytes = 64 * kMiB;
    o.max_object_bytes = kMiB;
    auto store = Store::open(executor_, *store_engine_, o);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    store_ = std::move(store).value();
    TransferEngineOptions t;
    t.kind = TransferEngineKind::kEmulated;
    auto transfer = make_transfer_engine(executor_, t);
    ASSERT_TRUE(transfer.is_ok());
    transfer_ = std::move(transfer).value();
  }

  void TearDown() override {
    if (store_) {
      bool closed = false;
      store_->close([&](Status) { closed = true; });
      run_until([&] { return closed; });
      store_.reset();
    }
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  bool run_until(const std::function<bool()>& pred) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    executor_.after(std::chrono::seconds(20), [] {});  // wakes the loop at the deadline
    return executor_.run_until(
        [&] { return pred() || std::chrono::steady_clock::now() > deadline; }) &&
           pred();
  }

  // Writes chunks of the given sizes; returns their keys in order.
  std::vector<Key> put_session(const std::vector<size_t>& sizes, uint64_t seed = 1) {
    std::vector<Key> keys;
    for (size_t i = 0; i < sizes.size(); ++i) {
      Key k{42, seed * 1000 + i};
      auto data = chunk_bytes(seed * 1000 + i, sizes[i]);
      expected_.push_back(data);
      bool done = false;
      Status st;
      store_->put(k, TokenRange{uint32_t(i * 16), uint32_t(i * 16 + 16)}, data.data(),
                  data.size(), [&](Status s) {
                    st = s;
                    done = true;
                  });
      EXPECT_TRUE(run_until([&] { return done; }));
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      keys.push_back(k);
    }
    return keys;
  }

  // The SSD engine a path reads through.
  std::unique_ptr<SsdEngine> engine_for(const std::string& path) {
    SsdEngineOptions o;
    if (path == "posix" || path == "odirect-bounce") {
      o.kind = SsdEngineKind::kThreadPool;
      o.direct = path != "posix";
      o.threads = 2;
    }
    auto e = make_ssd_engine(executor_, o);
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
    return e.is_ok() ? std::move(e).value() : nullptr;
  }

  std::unique_ptr<RestorePath> make_path(const std::string& name, SsdEngine& ssd,
                                         const RestorePathOptions& o) {
    if (name == "posix") return make_posix_restore_path(executor_, ssd, *transfer_, o);
    if (name == "odirect-bounce") {
      return make_odirect_bounce_restore_path(executor_, ssd, *transfer_, o);
    }
    return make_direct_restore_path(executor_, ssd, *transfer_, o);
  }

  Result<uint64_t> restore(RestorePath& path, const RestoreSession& session, DeviceBuffer& dst) {
    bool done = false;
    Result<uint64_t> result = Status::internal("restore did not complete in time");
    path.restore(session, dst, [&](Result<uint64_t> r) {
      result = std::move(r);
      done = true;
    });
    run_until([&] { return done; });
    return result;
  }

  RealExecutor executor_;
  std::string dir_;
  std::unique_ptr<SsdEngine> store_engine_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<TransferEngine> transfer_;
  std::vector<std::vector<uint8_t>> expected_;  // payloads in put order
};

}  // namespace tempokv::testing
