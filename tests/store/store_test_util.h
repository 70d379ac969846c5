// Helpers for the store tests: a temporary store directory (disk-backed, O_DIRECT checked), a
// deterministic payload derived from a seed, a store opened on a RealExecutor with a real engine,
// and blocking wrappers around the asynchronous calls (bounded, so a hang fails the test).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/aligned_buffer.h"
#include "common/splitmix.h"
#include "common/units.h"
#include "executor/loop_util.h"
#include "executor/real_executor.h"
#include "ssd/fault_injecting_engine.h"
#include "ssd/ssd_engine.h"
#include "store/format.h"
#include "store/store.h"

namespace tempokv::testing {

// A fresh directory under `parent`, removed with its contents at the end.
class TempDir {
 public:
  explicit TempDir(const std::string& parent = "/var/tmp") {
    std::string tmpl = parent + "/tempokv-store-test-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // O_DIRECT open of a file in the directory works (tmpfs or overlay may refuse it).
  bool supports_direct() const {
    std::string f = path_ + "/.probe";
    int fd = ::open(f.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0644);
    if (fd >= 0) ::close(fd);
    ::unlink(f.c_str());
    return fd >= 0;
  }

 private:
  std::string path_;
};

// Pseudo-random bytes from a seed: the same seed always gives the same payload.
inline void fill_payload(uint64_t seed, void* dst, size_t bytes) {
  auto* p = static_cast<uint8_t*>(dst);
  uint64_t s = seed * 0x2545f4914f6cdd1dULL + 1;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t v = splitmix64(s);
    std::memcpy(p + i, &v, 8);
  }
  uint64_t v = splitmix64(s);
  for (; i < bytes; ++i, v >>= 8) p[i] = static_cast<uint8_t>(v);
}
inline std::vector<uint8_t> payload(uint64_t seed, size_t bytes) {
  std::vector<uint8_t> v(bytes);
  fill_payload(seed, v.data(), bytes);
  return v;
}
inline Key test_key(uint64_t i) { return Key{0x7e57, i}; }

// The environment variable `name` as a number (iterations, seeds of the randomized tests), or
// fallback when it is not set.
inline uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

// A store on real files: executor, engine and store together, with blocking helpers.
struct StoreHarness {
  RealExecutor ex;
  std::unique_ptr<SsdEngine> engine;
  std::unique_ptr<Store> store;
  StoreOptions options;

  Status start(const StoreOptions& o, SsdEngineKind kind = SsdEngineKind::kUring, bool direct = true) {
    options = o;
    SsdEngineOptions eo;
    eo.kind = kind;
    eo.direct = direct;
    eo.threads = 2;
    auto e = make_ssd_engine(ex, eo);
    if (!e.is_ok()) return e.status();
    engine = std::move(e).value();
    return reopen();
  }
  // With an engine the test built (a FaultInjectingEngine around a real one, say).
  Status start_with(const StoreOptions& o, std::unique_ptr<SsdEngine> e) {
    options = o;
    engine = std::move(e);
    return reopen();
  }
  // With a fault-injecting wrapper around the default real engine; *faults points at it.
  Status start_with_faults(const StoreOptions& o, FaultInjectingEngine** faults) {
    auto inner = make_ssd_engine(ex, SsdEngineOptions{});
    if (!inner.is_ok()) return inner.status();
    auto fault = std::make_unique<FaultInjectingEngine>(ex, std::move(inner).value());
    *faults = fault.get();
    return start_with(o, std::move(fault));
  }
  Status reopen() {
    if (store) TEMPOKV_RETURN_IF_ERROR(close());
    auto s = Store::open(ex, *engine, options);
    if (!s.is_ok()) return s.status();
    store = std::move(s).value();
    return Status::ok();
  }
  Status close() {
    std::optional<Status> r;
    store->close([&](Status st) { r = st; });
    if (!run_until(ex, [&] { return r.has_value(); })) return Status::internal("close hung");
    store.reset();
    return *r;
  }
  Status put(const Key& k, const void* data, size_t bytes, TokenRange t = {0, 256}) {
    std::optional<Status> r;
    store->put(k, t, data, bytes, [&](Status st) { r = st; });
    if (!run_until(ex, [&] { return r.has_value(); })) return Status::internal("put hung");
    return *r;
  }
  Status put_seeded(uint64_t i, size_t bytes) {
    auto p = payload(i, bytes);
    return put(test_key(i), p.data(), p.size(), {static_cast<uint32_t>(i * 256),
                                                 static_cast<uint32_t>(i * 256 + 256)});
  }
  Result<size_t> get(const Key& k, void* dst, size_t dst_bytes) {
    std::optional<Result<size_t>> r;
    store->get(k, dst, dst_bytes, [&](Result<size_t> res) { r = std::move(res); });
    if (!run_until(ex, [&] { return r.has_value(); })) return Status::internal("get hung");
    return std::move(*r);
  }
  // Reads key i back and compares it with payload(i, bytes).
  ::testing::AssertionResult check_seeded(uint64_t i, size_t bytes) {
    auto buf = AlignedBuffer::allocate(round_up(bytes, kBlockBytes));
    if (!buf.is_ok()) return ::testing::AssertionFailure() << buf.status().to_string();
    Result<size_t> n = get(test_key(i), buf->data(), buf->size());
    if (!n.is_ok()) return ::testing::AssertionFailure() << "key " << i << ": " << n.status().to_string();
    if (*n != bytes) return ::testing::AssertionFailure() << "key " << i << ": " << *n << " bytes";
    auto want = payload(i, bytes);
    if (std::memcmp(buf->data(), want.data(), bytes) != 0) {
      return ::testing::AssertionFailure() << "key " << i << ": contents differ";
    }
    return ::testing::AssertionSuccess();
  }
  Status remove(const Key& k) {
    std::optional<Status> r;
    store->remove(k, [&](Status st) { r = st; });
    if (!run_until(ex, [&] { return r.has_value(); })) return Status::internal("remove hung");
    return *r;
  }
  ~StoreHarness() {
    if (store) (void)close();
  }
};

inline StoreOptions small_options(const std::string& dir) {
  StoreOptions o;
  o.dir = dir;
  o.segment_bytes = 1 * kMiB;
  o.capacity_bytes = 64 * kMiB;
  o.max_object_bytes = 512 * kKiB;
  return o;
}

// Segment files (seg-N.tkv) in dir.
inline size_t segment_file_count(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    n += store::parse_segment_file_name(e.path().filename().string()).has_value();
  }
  return n;
}

// A store in small_options on a fresh O_DIRECT-capable directory (skipped where there is none).
class SmallStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    if (!dir_.supports_direct()) GTEST_SKIP() << dir_.path() << " does not support O_DIRECT";
    ASSERT_TRUE(h_.start(small_options(dir_.path())).is_ok());
  }
  std::string segment_file(uint32_t id) const {
    return dir_.path() + "/" + store::segment_file_name(id);
  }
  TempDir dir_;
  StoreHarness h_;
};

// Six 1 MiB segments of small_options: three 300 KiB records fill one; 17 records, keys 0-16.
inline ::testing::AssertionResult fill_six_segments(StoreHarness& h, const std::string& dir) {
  for (uint64_t i = 0; i < 17; ++i) {
    Status st = h.put_seeded(i, 300 * kKiB);
    if (!st.is_ok()) return ::testing::AssertionFailure() << st.to_string();
  }
  if (segment_file_count(dir) != 6) return ::testing::AssertionFailure() << "not six segments";
  return ::testing::AssertionSuccess();
}

// Overwrites `len` bytes at `offset` of a file with their bitwise complement (buffered I/O).
inline void flip_bytes(const std::string& path, uint64_t offset, size_t len = 1) {
  int fd = ::open(path.c_str(), O_RDWR);
  std::vector<uint8_t> b(len);
  if (pread(fd, b.data(), len, static_cast<off_t>(offset)) != static_cast<ssize_t>(len)) std::abort();
  for (auto& x : b) x = static_cast<uint8_t>(~x);
  if (pwrite(fd, b.data(), len, static_cast<off_t>(offset)) != static_cast<ssize_t>(len)) std::abort();
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

}  // namespace tempokv::testing
