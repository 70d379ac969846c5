// tempokvd's write path against other tenants: each runtime stages its puts in a region of its
// own, and a put is stored only when the region holds the bytes its client hashed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "common/checksum.h"
#include "service/daemon_fixture.h"
#include "service/raw_peer.h"
#include "tempokv/protocol.h"

namespace tempokv::testing {
namespace {

// A raw peer speaking protocol version 3 as runtime `runtime`, with the region its
// reservations name mapped.
class Writer {
 public:
  Writer(const std::string& endpoint, const std::string& runtime) : peer_(endpoint) {
    service::Hello h{{service::kProtocolVersion}, "writer"};
    h.runtime = runtime;
    auto hi = peer_.ask(request(next_++, h));
    ok_ = hi.is_ok() && std::holds_alternative<service::Reply>(*hi);
  }
  ~Writer() {
    if (map_ != nullptr) munmap(map_, bytes_);
  }
  bool ok() const { return ok_; }
  // reserve_write of n bytes: the offset, with the region mapped.
  Result<uint64_t> reserve(uint64_t n) {
    TEMPOKV_ASSIGN_OR_RETURN(service::ServerMessage m, ask(service::ReserveWrite{n}));
    if (const auto* e = std::get_if<service::ErrorReply>(&m)) return e->error;
    const auto& r = std::get<service::Reply>(m);
    if (map_ == nullptr) {
      const int fd = open(r.write_path.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0) return Status::from_errno(errno, "open " + r.write_path);
      map_ = static_cast<std::byte*>(
          mmap(nullptr, r.write_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
      close(fd);
      bytes_ = r.write_bytes;
      path_ = r.write_path;
    }
    return *r.offset;
  }
  Result<service::ServerMessage> put(Key key, uint64_t offset, uint64_t n, Hash128 sum) {
    return ask(service::Put{key, {0, 16}, offset, n, sum.low, sum.high});
  }
  Result<service::ServerMessage> ask(service::Op op) {
    return peer_.ask(request(next_++, std::move(op), service::kProtocolVersion));
  }
  std::byte* region() { return map_; }
  const std::string& path() const { return path_; }

 private:
  RawPeer peer_;
  uint64_t next_ = 1;
  bool ok_ = false;
  std::byte* map_ = nullptr;
  uint64_t bytes_ = 0;
  std::string path_;
};

bool is_reply(const Result<service::ServerMessage>& m) {
  return m.is_ok() && std::holds_alternative<service::Reply>(*m);
}

TEST_F(DaemonTest, EachRuntimeWritesInARegionOfItsOwn) {
  Writer a(daemon_->endpoint(), "engine-a"), b(daemon_->endpoint(), "engine-b");
  ASSERT_TRUE(a.ok() && b.ok());
  auto oa = a.reserve(kObject), ob = b.reserve(kObject);
  ASSERT_TRUE(oa.is_ok()) << oa.status().to_string();
  ASSERT_TRUE(ob.is_ok()) << ob.status().to_string();
  EXPECT_NE(a.path(), b.path());
  EXPECT_EQ(std::filesystem::path(a.path()).parent_path(),
            std::filesystem::path(b.path()).parent_path());
  // A second session of engine-a writes in engine-a's region.
  Writer a2(daemon_->endpoint(), "engine-a");
  ASSERT_TRUE(a2.ok());
  ASSERT_TRUE(a2.reserve(4096).is_ok());
  EXPECT_EQ(a2.path(), a.path());
  // Both runtimes' puts store what each wrote, whatever the other did in its own region.
  std::memset(a.region() + *oa, 0xaa, kObject);
  std::memset(b.region() + *ob, 0xbb, kObject);
  std::memset(b.region(), 0xcc, kObject);  // b scribbling over its whole region: not a's bytes
  EXPECT_TRUE(is_reply(a.put(Key{1, 1}, *oa, kObject, xxh3_128(a.region() + *oa, kObject))));
  auto c = client();
  ASSERT_TRUE(c);
  EXPECT_EQ(stat_of(*c, "write_regions"), 2);
  EXPECT_EQ(stat_of(*c, "write_regions_made_total"), 2);
  auto m = std::vector<ManifestEntry>{{Key{1, 1}, kObject}};
  stage(*c, 3, m);
  auto spans = c->objects(3);
  ASSERT_TRUE(spans.is_ok());
  const std::byte* got = c->tier_data() + (*spans)[0].offset;
  EXPECT_EQ(std::count(got, got + kObject, std::byte{0xaa}), int64_t(kObject));
}

TEST_F(DaemonTest, APutWhoseBytesChangedAfterTheClientHashedThemIsRefusedAndNothingStored) {
  Writer w(daemon_->endpoint(), "engine-a");
  ASSERT_TRUE(w.ok());
  auto off = w.reserve(kObject);
  ASSERT_TRUE(off.is_ok()) << off.status().to_string();
  std::memset(w.region() + *off, 0x11, kObject);
  const Hash128 meant = xxh3_128(w.region() + *off, kObject);
  w.region()[*off + 1000] = std::byte{0x12};  // changed after the client hashed them
  expect_error(w.put(Key{2, 2}, *off, kObject, meant), StatusCode::kInvalidArgument,
               "not the checksum the put declared");
  auto c = client();
  ASSERT_TRUE(c);
  auto sizes = c->lookup(std::vector<Key>{Key{2, 2}});
  ASSERT_TRUE(sizes.is_ok());
  EXPECT_EQ((*sizes)[0], 0u);
  EXPECT_EQ(stat_of(*c, "put_checksum_mismatches_total"), 1);
  EXPECT_EQ(stat_of(*c, "write_region_used_bytes"), 0);  // the refused put's room is back
  // The same bytes with their own checksum are stored.
  auto again = w.reserve(kObject);
  ASSERT_TRUE(again.is_ok());
  std::memset(w.region() + *again, 0x11, kObject);
  EXPECT_TRUE(is_reply(w.put(Key{2, 2}, *again, kObject, meant)));
  sizes = c->lookup(std::vector<Key>{Key{2, 2}});
  ASSERT_TRUE(sizes.is_ok());
  EXPECT_EQ((*sizes)[0], kObject);
}

TEST_F(DaemonTest, ARuntimesRegionGoesWithItsLastSession) {
  std::string path;
  {
    Writer w(daemon_->endpoint(), "engine-a");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w.reserve(4096).is_ok());
    path = w.path();
    EXPECT_TRUE(std::filesystem::exists(path));
    ASSERT_TRUE(is_reply(w.ask(service::Bye{})));
  }
  auto c = client();
  ASSERT_TRUE(c);
  // Removed on a job thread: up to 10 s, for a suite run on two loaded cores.
  for (int i = 0; i < 1000 && std::filesystem::exists(path); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(stat_of(*c, "write_regions"), 0);
}

}  // namespace
}  // namespace tempokv::testing
