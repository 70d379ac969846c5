// Limits a hostile or broken client cannot break, against a real tempokvd process: per-session
// quotas on the write region and on live requests, per-session queues served round-robin, a
// closed client's backlog discarded undecoded, and memory that returns after a flood.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "service/daemon_fixture.h"
#include "service/raw_peer.h"

namespace tempokv::testing {
namespace {

using ::testing::HasSubstr;

// Reserves `bytes` through a raw session: the offset, or the error.
Result<uint64_t> reserve(RawPeer& peer, uint64_t id, uint64_t bytes) {
  auto m = peer.ask(request(id, service::ReserveWrite{bytes}, 3));
  if (!m.is_ok()) return m.status();
  if (const auto* e = std::get_if<service::ErrorReply>(&*m)) return e->error;
  const auto* r = std::get_if<service::Reply>(&*m);
  if (!r || !r->offset) return Status::internal("not an offset reply");
  return *r->offset;
}

class QuotaTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override {
    return {"--set", "store.max_object_bytes=64KiB", "--set",
            "server.max_write_bytes_per_session=96KiB", "--set",
            "server.max_requests_per_runtime=3"};
  }
};

TEST_F(QuotaTest, ASessionHoldsNoMoreOfTheWriteRegionThanItsQuota) {
  RawPeer a(daemon_->endpoint());
  RawPeer b(daemon_->endpoint());
  ASSERT_TRUE(a.ask(request(1, service::Hello{{3}, "a"})).is_ok());
  ASSERT_TRUE(b.ask(request(1, service::Hello{{3}, "b"})).is_ok());
  auto first = reserve(a, 2, 60000);  // 60 KiB charged (4 KiB slots)
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  auto second = reserve(a, 3, 40000);  // 40 KiB more: 100 KiB > 96 KiB
  ASSERT_FALSE(second.is_ok());
  EXPECT_EQ(second.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(second.status().message(), HasSubstr("server.max_write_bytes_per_session"));
  // The quota is the session's: another session reserves the same amount.
  EXPECT_TRUE(reserve(b, 2, 40000).is_ok());
  // Giving the first reservation back makes room in a's quota again.
  auto back = a.ask(request(4, service::AbortWrite{*first}, 3));
  ASSERT_TRUE(back.is_ok() && std::holds_alternative<service::Reply>(*back));
  EXPECT_TRUE(reserve(a, 5, 40000).is_ok());
}

TEST_F(QuotaTest, ARuntimeHasNoMoreLiveRequestsThanItsQuota) {
  auto c = client();
  ASSERT_TRUE(c);
  for (uint64_t id = 1; id <= 3; ++id) {
    ASSERT_TRUE(c->add_request({id, 2048, 1024, 0, 16}).is_ok()) << id;
  }
  Status over = c->add_request({4, 2048, 1024, 0, 16});
  EXPECT_EQ(over.code(), StatusCode::kResourceExhausted) << over.to_string();
  EXPECT_THAT(over.message(), HasSubstr("server.max_requests_per_runtime"));
  // A finished and a cancelled request each give their place back.
  ASSERT_TRUE(c->finished(1, 10).is_ok());
  ASSERT_TRUE(c->cancel(2).is_ok());
  EXPECT_TRUE(c->add_request({4, 2048, 1024, 0, 16}).is_ok());
  EXPECT_TRUE(c->add_request({5, 2048, 1024, 0, 16}).is_ok());
  EXPECT_EQ(c->add_request({6, 2048, 1024, 0, 16}).code(), StatusCode::kResourceExhausted);
  // Another session (its own runtime) has a quota of its own.
  auto other = client();
  ASSERT_TRUE(other);
  EXPECT_TRUE(other->add_request({100, 2048, 1024, 0, 16}).is_ok());
}

// Lookups of `keys` random keys (about 12 bytes each on the wire), encoded once: messages()
// copies the encoding and writes each message's id into it (ids from 2^32 all take 8 bytes).
class HeavyLookups {
 public:
  explicit HeavyLookups(size_t keys) {
    std::mt19937_64 rng(keys);
    service::Lookup l;
    for (size_t i = 0; i < keys; ++i) l.keys.push_back(Key{7, rng()});
    base_ = request(kFirst, l);
    // MessagePack writes the id as 0xcf and 8 big-endian bytes; the random keys never match it.
    for (at_ = 1; at_ + 8 <= base_.size(); ++at_) {
      if (base_[at_ - 1] == std::byte{0xcf} && load(base_, at_) == kFirst) break;
    }
  }
  // The n-th message (id 2^32 + n; the hello is id 1).
  std::vector<std::byte> message(uint64_t n) const {
    std::vector<std::byte> m = base_;
    const uint64_t id = kFirst + n;
    for (int b = 0; b < 8; ++b) m[at_ + b] = std::byte((id >> (56 - 8 * b)) & 0xff);
    return m;
  }

 private:
  static constexpr uint64_t kFirst = 1ULL << 32;
  static uint64_t load(const std::vector<std::byte>& m, size_t at) {
    uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v = (v << 8) | uint64_t(m[at + b]);
    return v;
  }
  std::vector<std::byte> base_;
  size_t at_ = 0;
};

// The daemon's resident set in KiB (/proc/PID/status VmRSS), 0 when unreadable.
uint64_t rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

class FloodTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override {
    return {"--set", "server.max_queued_messages=20"};
  }
};

TEST_F(FloodTest, AFloodingSessionIsCappedAndCannotStarveAnother) {
  auto victim = client();
  ASSERT_TRUE(victim);
  RawPeer flood(daemon_->endpoint());
  ASSERT_TRUE(flood.ask(request(1, service::Hello{{1}, "flood"})).is_ok());
  const HeavyLookups lookups(256);
  constexpr int kMessages = 1000;
  int sent = 0, answered = 0, refused = 0, victim_calls = 0;
  double most_queued = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (answered + refused < kMessages && std::chrono::steady_clock::now() < deadline) {
    while (sent < kMessages && flood.send(lookups.message(uint64_t(sent)))) ++sent;
    for (;;) {
      auto m = flood.receive(/*wait_ms=*/sent < kMessages ? 0 : 5000);
      if (!m.is_ok()) break;
      const auto* e = std::get_if<service::ErrorReply>(&*m);
      if (e && e->error.code() == StatusCode::kResourceExhausted) {
        EXPECT_THAT(e->error.message(), HasSubstr("server.max_queued_messages"));
        ++refused;
      } else {
        EXPECT_TRUE(std::holds_alternative<service::Reply>(*m));
        ++answered;
      }
    }
    if (sent < kMessages || answered + refused < kMessages) {
      // The other session is served while the flood's backlog waits: its calls are answered
      // with flood messages still queued behind them.
      ASSERT_TRUE(victim->heartbeat().is_ok());
      ++victim_calls;
      most_queued = std::max(most_queued, stat_of(*victim, "queued_messages"));
    }
  }
  // Every message was answered once: served, or refused unread when the queue was full.
  EXPECT_EQ(answered + refused, kMessages);
  EXPECT_GT(victim_calls, 0);
  // The queue never held more than the flooder's 20 and the victim's own call.
  EXPECT_LE(most_queued, 21);
  EXPECT_EQ(stat_of(*victim, "messages_dropped_total"), refused);
}

TEST_F(DaemonTest, AClosedClientsBacklogIsDiscardedNotDecoded) {
  auto watcher = client();
  ASSERT_TRUE(watcher);
  // About 2 s of decoding for the daemon, sent in a fraction of that: the disconnect comes long
  // before the backlog is served, however fast the machine.
  constexpr int kMessages = 900;
  const HeavyLookups lookups(4096);
  {
    RawPeer flood(daemon_->endpoint(), /*linger_ms=*/-1);
    ASSERT_TRUE(flood.ask(request(1, service::Hello{{1}, "flood"})).is_ok());
    for (int i = 0; i < kMessages; ++i) ASSERT_TRUE(flood.send(lookups.message(i), true));
  }  // closed (after its messages left): the daemon sees the disconnect with a backlog queued
  ASSERT_TRUE(wait_for(*watcher, [&] {
    return stat_of(*watcher, "queued_messages") == 0 &&
           stat_of(*watcher, "sessions_disconnected_total") >= 1;
  }));
  // Most of the backlog was still waiting when the disconnect came; none of it was decoded.
  const double discarded = stat_of(*watcher, "messages_discarded_total");
  EXPECT_GT(discarded, 0);
  EXPECT_LE(discarded, kMessages);
}

TEST_F(DaemonTest, MemoryReturnsAfterAFlood) {
  auto watcher = client();
  ASSERT_TRUE(watcher);
  const uint64_t before = rss_kib(daemon_->pid());
  ASSERT_GT(before, 0u);
  {
    RawPeer flood(daemon_->endpoint(), /*linger_ms=*/-1);
    ASSERT_TRUE(flood.ask(request(1, service::Hello{{1}, "flood"})).is_ok());
    // 200 messages of 1.5 MiB (each refused as oversized once its turn comes), none of whose
    // replies are read: the daemon holds up to its queue's 64 MiB and ZeroMQ's pipe at once.
    const std::vector<std::byte> big(3 << 19, std::byte{0x90});
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(flood.send(big, true));
  }
  ASSERT_TRUE(wait_for(*watcher, [&] {
    return stat_of(*watcher, "sessions_disconnected_total") >= 1 &&
           stat_of(*watcher, "queued_messages") == 0;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const uint64_t after = rss_kib(daemon_->pid());
  EXPECT_LT(after, before + 48 * 1024) << "VmRSS " << before << " KiB before, " << after
                                       << " KiB after a 300 MiB flood";
}

}  // namespace
}  // namespace tempokv::testing
