// Each host path restores a real stored session byte-exact, with the CPU copies its design says.
#include <cstring>

#include "restore_test_util.h"
#include "transfer/restore_verify.h"

namespace tempokv::testing {
namespace {

struct PathCase {
  std::string name;
  uint64_t slot_bytes;
  uint32_t depth;
  uint64_t tail_min_bytes = 0;
};

class RestorePathTest : public RestoreFixture, public ::testing::WithParamInterface<PathCase> {};

RestorePathOptions path_options(const PathCase& c) {
  return RestorePathOptions{c.slot_bytes, c.depth, c.tail_min_bytes};
}

TEST_P(RestorePathTest, RestoresByteExact) {
  const PathCase& c = GetParam();
  // Unaligned sizes on purpose: the last chunk and the middle one end inside a 4 KiB block.
  auto keys = put_session({64 * 1024, 40000, 4096, 100 * 1024 + 1});
  auto session = RestoreSession::resolve(*store_, keys);
  ASSERT_TRUE(session.is_ok()) << session.status().to_string();
  auto ssd = engine_for(c.name);
  ASSERT_NE(ssd, nullptr);
  auto path = make_path(c.name, *ssd, path_options(c));
  ASSERT_TRUE(path->prepare().is_ok());
  auto dst = transfer_->allocate(session->device_bytes()).value();
  auto r = restore(*path, *session, *dst);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(*r, session->payload_bytes());
  for (size_t i = 0; i < keys.size(); ++i) {
    const RestoreExtent& e = session->extents()[i];
    ASSERT_EQ(e.payload_bytes, expected_[i].size());
    EXPECT_EQ(std::memcmp(dst->data() + e.device_offset, expected_[i].data(), e.payload_bytes), 0)
        << "chunk " << i;
  }
  EXPECT_TRUE(verify_restored(*session, *dst, *transfer_).is_ok());

  RestoreStats st = path->stats();
  EXPECT_EQ(st.restores, 1u);
  uint64_t reads = 0;  // the pieces piece_bytes gives, one read each
  uint64_t left = 0;
  for (const RestoreExtent& e : session->extents()) left += e.read_bytes;
  for (const RestoreExtent& e : session->extents()) {
    for (uint64_t off = 0, n = 0; off < e.read_bytes; off += n, left -= n, ++reads) {
      n = piece_bytes(e.read_bytes - off, left, path_options(c));
    }
  }
  EXPECT_EQ(st.reads, reads);
  EXPECT_GT(st.tail_ns, 0u);  // the last copy, at least
  EXPECT_LE(st.tail_ns, st.restore_ns);
  EXPECT_EQ(st.bytes, session->payload_bytes());
  uint64_t host = st.cpu_copies.host_copy_bytes;
  uint64_t want_host = 0;  // direct: the emulated device copy is the only one
  if (c.name == "odirect-bounce") want_host = session->payload_bytes();
  if (c.name == "posix") want_host = session->device_bytes();  // whole blocks read
  EXPECT_EQ(host, want_host);
  EXPECT_EQ(transfer_->stats().cpu_copies.emulated_device_copy_bytes, session->payload_bytes());
}

TEST_P(RestorePathTest, RestoresTwiceWithTheSameBuffers) {
  const PathCase& c = GetParam();
  auto keys_a = put_session({32 * 1024, 32 * 1024}, 1);
  auto keys_b = put_session({48 * 1024}, 2);
  auto ssd = engine_for(c.name);
  auto path = make_path(c.name, *ssd, path_options(c));
  ASSERT_TRUE(path->prepare().is_ok());
  uint64_t staging = path->stats().staging_bytes;
  EXPECT_GT(staging, 0u);
  auto dst = transfer_->allocate(1 << 20).value();
  for (const auto* keys : {&keys_a, &keys_b}) {
    auto session = RestoreSession::resolve(*store_, *keys);
    ASSERT_TRUE(session.is_ok());
    auto r = restore(*path, *session, *dst);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_TRUE(verify_restored(*session, *dst, *transfer_).is_ok());
  }
  EXPECT_EQ(path->stats().staging_bytes, staging);  // nothing allocated on the data path
  path->release();
  EXPECT_EQ(path->stats().staging_bytes, 0u);
}

TEST(DefaultRestoreOptions, DirectReadsFourMiBPiecesSixteenDeepTheBaselinesWholeChunksOneByOne) {
  const uint64_t mib = 1ULL << 20;
  RestorePathOptions d = default_restore_options("direct", 24 * mib);
  EXPECT_EQ(d.slot_bytes, 4 * mib);
  EXPECT_EQ(d.depth, 16u);
  EXPECT_EQ(default_restore_options("direct", mib + 1).slot_bytes, mib + 4096);  // whole blocks
  for (const char* baseline : {"posix", "odirect-bounce"}) {
    RestorePathOptions b = default_restore_options(baseline, 24 * mib);
    EXPECT_EQ(b.slot_bytes, 24 * mib) << baseline;
    EXPECT_EQ(b.depth, 1u) << baseline;
    EXPECT_EQ(default_restore_options(baseline, 96 * mib).slot_bytes, 64 * mib) << baseline;
  }
  EXPECT_EQ(d.tail_min_bytes, mib / 2);
  RestorePathOptions g = default_restore_options("gds", 96 * mib);
  EXPECT_EQ(g.slot_bytes, 64 * mib);
  EXPECT_EQ(g.depth, 4u);
  EXPECT_TRUE(d.validate().is_ok());
}

// A session's last reads shrink to a quarter of what is left, down to the minimum, so the copy
// after the last read is short; elsewhere and without a taper, whole slots.
TEST(PieceBytes, ShrinkNearTheSessionsEndNeverBelowTheMinimum) {
  const uint64_t mib = 1ULL << 20;
  const std::vector<uint64_t> extents = {24 * mib, 24 * mib, 8 * mib + 4096};
  for (uint64_t tail : {uint64_t{0}, mib / 2}) {
    RestorePathOptions o{4 * mib, 16, tail};
    uint64_t left = 0;
    for (uint64_t e : extents) left += e;
    const uint64_t total = left;
    std::vector<uint64_t> pieces;
    for (uint64_t e : extents) {
      for (uint64_t off = 0; off < e;) {
        const uint64_t n = piece_bytes(e - off, left, o);
        ASSERT_GT(n, 0u);
        EXPECT_EQ(n % 4096, 0u);
        EXPECT_LE(n, 4 * mib);
        if (tail != 0) {
          EXPECT_LE(n, std::max(tail, left / 4)) << "left " << left;
        }
        if (left - n >= 16 * mib && e - off >= 4 * mib) {
          EXPECT_EQ(n, 4 * mib) << "left " << left;
        }
        pieces.push_back(n);
        off += n;
        left -= n;
      }
    }
    EXPECT_EQ(left, 0u);
    uint64_t sum = 0;
    for (uint64_t n : pieces) sum += n;
    EXPECT_EQ(sum, total);
    if (tail == 0) {
      EXPECT_EQ(pieces.size(), 6u + 6u + 3u);  // the last: 4 MiB, 4 MiB, 4 KiB
      EXPECT_EQ(pieces.back(), 4096u);
    } else {
      EXPECT_LE(pieces.back(), tail);
      EXPECT_GT(pieces.size(), 15u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Paths, RestorePathTest,
    ::testing::Values(PathCase{"posix", 64 * 1024, 1}, PathCase{"odirect-bounce", 64 * 1024, 1},
                      PathCase{"direct", 64 * 1024, 4},
                      // Slots smaller than a chunk: chunks are read in pieces.
                      PathCase{"direct", 16 * 1024, 3}, PathCase{"odirect-bounce", 8 * 1024, 2},
                      // Tapered: the last reads shrink to 4 KiB.
                      PathCase{"direct", 32 * 1024, 4, 4096},
                      PathCase{"posix", 12 * 1024, 2}),
    [](const ::testing::TestParamInfo<PathCase>& p) {
      std::string n = p.param.name + "_" + std::to_string(p.param.slot_bytes / 1024) + "k_d" +
                      std::to_string(p.param.depth);
      if (p.param.tail_min_bytes) n += "_tail" + std::to_string(p.param.tail_min_bytes / 1024) + "k";
      for (char& ch : n) {
        if (ch == '-') ch = '_';
      }
      return n;
    });

}  // namespace
}  // namespace tempokv::testing
