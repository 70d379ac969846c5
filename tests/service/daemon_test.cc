// tempokvd as a process: every call through the C++ client, claims shared by two sessions of
// one runtime, a killed client, bad messages, and a restart that finds the store again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <zmq.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "protocol/wire.h"
#include "service/daemon_fixture.h"
#include "service/raw_peer.h"
#include "tempokv/protocol.h"

namespace tempokv::testing {
namespace {

using ::testing::HasSubstr;
using std::chrono::milliseconds;

TEST_F(DaemonTest, EveryCallWorksAndTheClaimsBytesAreInTheSharedTier) {
  auto c = client();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->hello().version, service::kProtocolVersion);
  EXPECT_EQ(c->hello().tier_bytes, 64u << 20);
  ASSERT_NE(c->tier_data(), nullptr);
  auto m = put_objects(*c, 100, 4);
  std::vector<Key> keys = {m[0].key, m[3].key, Key{1, 999}};
  auto sizes = c->lookup(keys);
  ASSERT_TRUE(sizes.is_ok());
  EXPECT_EQ(*sizes, (std::vector<uint64_t>{kObject, kObject, 0}));
  ASSERT_TRUE(c->heartbeat().is_ok());
  stage(*c, 7, m);
  expect_bytes(*c, 7, m);
  EXPECT_GT(stat_of(*c, "tier_protected_bytes") + stat_of(*c, "tier_resident_bytes"), 0);
  ASSERT_TRUE(c->iteration_started(std::vector<uint64_t>{7}, {}).is_ok());
  ASSERT_TRUE(c->begin_transfer(7).is_ok());
  ASSERT_TRUE(c->object_transferred(7, m[0].key).is_ok());
  ASSERT_TRUE(c->end_transfer(7).is_ok());
  ASSERT_TRUE(c->prefill_done(7).is_ok());
  ASSERT_TRUE(c->tokens_generated(7, 2).is_ok());
  ASSERT_TRUE(c->finished(7, 3).is_ok());
  // A second request cancelled before its retrieval.
  ASSERT_TRUE(c->add_request({8, 2048, 1024, 4 * kObject, 16}).is_ok());
  ASSERT_TRUE(c->report_hit(8, m).is_ok());
  ASSERT_TRUE(c->cancel(8).is_ok());
  EXPECT_EQ(stat_of(*c, "tier_protected_bytes"), 0);
  EXPECT_EQ(stat_of(*c, "tier_reserved_bytes"), 0);
  EXPECT_EQ(stat_of(*c, "claims_stage_ready"), 0);
  EXPECT_EQ(stat_of(*c, "puts_total"), 4);
  EXPECT_EQ(stat_of(*c, "write_region_used_bytes"), 0);
  // The store's writes are seen: the calibrated write cost (the prior 1.0 until learned).
  EXPECT_GT(stat_of(*c, "ssd_write_cost"), 0);
  EXPECT_GE(stat_of(*c, "ssd_writes_while_reading"), 0);
  ASSERT_TRUE(c->bye().is_ok());
}

TEST_F(DaemonTest, AdapterErrorsComeBackTyped) {
  auto c = client();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->admitted(42).code(), StatusCode::kNotFound);
  auto m = put_objects(*c, 200, 1);
  ASSERT_TRUE(c->add_request({1, 2048, 256, kObject, 16}).is_ok());
  EXPECT_EQ(c->add_request({1, 2048, 256, kObject, 16}).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(c->report_hit(1, m).is_ok());
  EXPECT_EQ(c->begin_transfer(1).code(), StatusCode::kFailedPrecondition);
  // A manifest naming an object the store does not have fails the claim, not the daemon.
  ASSERT_TRUE(c->add_request({2, 2048, 256, kObject, 16}).is_ok());
  ASSERT_TRUE(c->report_hit(2, {{Key{1, 12345}, kObject}}).is_ok());
  Status failure;
  bool told = false;
  auto answer = c->request_retrieval(2, [&](ClaimId, Result<RetrievalPath> p) {
    told = true;
    failure = p.status();
  });
  if (answer.is_ok()) {
    ASSERT_TRUE(wait_for(*c, [&] { return told; }));
    EXPECT_FALSE(failure.is_ok());
  } else {
    EXPECT_EQ(answer.status().code(), StatusCode::kNotFound);
  }
  // The failed claim frees its id once the request is finished.
  ASSERT_TRUE(c->finished(2, 0).is_ok());
  EXPECT_TRUE(c->add_request({2, 2048, 0, 0, 16}).is_ok());
  // Another runtime's request ids are not this session's to name.
  auto other = client();
  ASSERT_TRUE(other);
  EXPECT_EQ(other->cancel(1).code(), StatusCode::kNotFound);
  EXPECT_TRUE(c->cancel(1).is_ok());
}

TEST_F(DaemonTest, TwoRanksShareAClaimUntilBothEndTheirTransfer) {
  auto rank0 = client("engine-a");
  auto rank1 = client("engine-a");
  ASSERT_TRUE(rank0 && rank1);
  EXPECT_EQ(rank0->hello().runtime_id, rank1->hello().runtime_id);
  auto m = put_objects(*rank0, 300, 3);
  stage(*rank0, 11, m);
  // Rank 1 joins the same claim: no add_request of its own.
  bool ready1 = false;
  auto answer = rank1->request_retrieval(11, [&](ClaimId, Result<RetrievalPath>) {
    ready1 = true;
  });
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  if (*answer == RetrievalAnswer::kWait) {
    ASSERT_TRUE(wait_for(*rank1, [&] { return ready1; }));
  }
  expect_bytes(*rank0, 11, m);
  expect_bytes(*rank1, 11, m);
  ASSERT_TRUE(rank0->begin_transfer(11).is_ok());
  ASSERT_TRUE(rank0->end_transfer(11).is_ok());
  EXPECT_GT(stat_of(*rank0, "tier_protected_bytes"), 0) << "released before rank 1 copied";
  EXPECT_EQ(stat_of(*rank0, "claims_transferring"), 1);
  ASSERT_TRUE(rank1->begin_transfer(11).is_ok());
  ASSERT_TRUE(rank1->end_transfer(11).is_ok());
  EXPECT_EQ(stat_of(*rank0, "tier_protected_bytes"), 0);
  EXPECT_EQ(stat_of(*rank0, "claims_stage_ready") + stat_of(*rank0, "claims_transferring"), 0);
}

TEST_F(DaemonTest, WithDeclaredRanksAClaimWaitsForEveryRanksCopyWithoutABarrier) {
  auto connect_rank = [&](const char* name) {
    ClientOptions o;
    o.endpoint = daemon_->endpoint();
    o.name = name;
    o.runtime = "tp-engine";
    o.ranks = 2;
    auto c = ServiceClient::connect(o);
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    return c.is_ok() ? std::move(c).value() : nullptr;
  };
  auto rank0 = connect_rank("rank0");
  auto rank1 = connect_rank("rank1");
  ASSERT_TRUE(rank0 && rank1);
  auto m = put_objects(*rank0, 350, 2);
  stage(*rank0, 21, m);
  // Rank 0 copies and ends before rank 1 even asks: the claim must wait for rank 1.
  ASSERT_TRUE(rank0->begin_transfer(21).is_ok());
  ASSERT_TRUE(rank0->end_transfer(21).is_ok());
  EXPECT_GT(stat_of(*rank0, "tier_protected_bytes"), 0) << "released before rank 1 copied";
  bool ready1 = false;
  auto answer = rank1->request_retrieval(21, [&](ClaimId, Result<RetrievalPath>) {
    ready1 = true;
  });
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  expect_bytes(*rank1, 21, m);
  ASSERT_TRUE(rank1->begin_transfer(21).is_ok());
  ASSERT_TRUE(rank1->end_transfer(21).is_ok());
  EXPECT_EQ(stat_of(*rank0, "tier_protected_bytes"), 0);
  // A rank that dies does not hold the next claim: with one rank left, one copy ends it.
  stage(*rank0, 22, m);
  rank1.reset();  // the destructor sends nothing: the daemon sees the disconnect
  ASSERT_TRUE(wait_for(*rank0, [&] { return stat_of(*rank0, "sessions") == 1; }));
  ASSERT_TRUE(rank0->begin_transfer(22).is_ok());
  ASSERT_TRUE(rank0->end_transfer(22).is_ok());
  EXPECT_EQ(stat_of(*rank0, "tier_protected_bytes"), 0);
}

TEST_F(DaemonTest, AKilledClientLeavesNoProtectionBehind) {
  auto m = put_and_leave(400, 8);
  // The child stages a claim and dies without a word.
  in_killed_child([&](ServiceClient& c) {
    if (!c.add_request({5, 4096, 2048, 8 * kObject, 16}).is_ok()) return 3;
    if (!c.report_hit(5, m).is_ok()) return 4;
    (void)c.update_order(std::vector<uint64_t>{5});
    (void)c.request_retrieval(5, nullptr);
    return 0;
  });
  auto c = client();
  ASSERT_TRUE(c);
  EXPECT_TRUE(wait_for(*c, [&] {
    return stat_of(*c, "tier_protected_bytes") == 0 && stat_of(*c, "tier_reserved_bytes") == 0 &&
           stat_of(*c, "claims_staging") == 0 && stat_of(*c, "claims_stage_ready") == 0 &&
           stat_of(*c, "sessions") == 1;
  })) << "protected " << stat_of(*c, "tier_protected_bytes");
  EXPECT_EQ(stat_of(*c, "claims_abandoned_total"), 1);
}

class FourSessionDaemonTest : public DaemonTest {
 protected:
  std::vector<std::string> extra_args() const override {
    return {"--set", "server.max_sessions=4"};
  }
};

TEST_F(FourSessionDaemonTest, PeersThatNeverSayHelloTakeNoSessionSlot) {
  // Eight peers each send a request without a hello: each is refused, and none holds a slot.
  std::vector<std::unique_ptr<RawPeer>> peers;
  for (uint64_t i = 0; i < 8; ++i) {
    peers.push_back(std::make_unique<RawPeer>(daemon_->endpoint()));
    expect_error(peers.back()->ask(request(1, service::Heartbeat{})),
                 StatusCode::kFailedPrecondition, "has not said hello");
  }
  // All four slots are still free for clients that do say hello.
  std::vector<std::unique_ptr<ServiceClient>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(client());
    ASSERT_TRUE(clients.back()) << "client " << i << " refused";
  }
  EXPECT_EQ(stat_of(*clients[0], "sessions_refused_total"), 0);
}

TEST_F(DaemonTest, BadMessagesGetTypedErrorsAndOthersKeepBeingServed) {
  auto good = client();
  ASSERT_TRUE(good);
  RawPeer raw(daemon_->endpoint());
  const std::vector<std::byte> garbage = {std::byte{0xc1}, std::byte{0x00}};
  expect_error(raw.ask(garbage), StatusCode::kInvalidArgument, "malformed");
  auto hello = request(1, service::Hello{{1}, "raw"});
  expect_error(raw.ask(std::vector<std::byte>(hello.begin(), hello.end() - 3)),
               StatusCode::kInvalidArgument, "truncated");
  expect_error(raw.ask(std::vector<std::byte>((2u << 20), std::byte{0x90})),
               StatusCode::kInvalidArgument, "exceeds the limit");
  expect_error(raw.ask(std::vector<std::vector<std::byte>>{hello, hello}),
               StatusCode::kInvalidArgument, "one frame");
  expect_error(raw.ask(request(2, service::Heartbeat{})), StatusCode::kFailedPrecondition,
               "hello");
  ASSERT_TRUE(good->heartbeat().is_ok());
  auto hi = raw.ask(hello);
  ASSERT_TRUE(hi.is_ok() && std::holds_alternative<service::Reply>(*hi));
  expect_error(raw.ask(request(1, service::Heartbeat{})), StatusCode::kFailedPrecondition,
               "not above");
  expect_error(raw.ask(request(5, service::Hello{{1}, "again"})), StatusCode::kFailedPrecondition,
               "already said hello");
  expect_error(raw.ask(request(6, service::Admitted{77})), StatusCode::kNotFound, "77");
  // This peer speaks version 1: no writes (they need the runtime's own region, version 3).
  expect_error(raw.ask(request(7, service::Put{Key{1, 1}, {0, 1}, 4096, 10})),
               StatusCode::kInvalidArgument, "needs protocol version 3");
  expect_error(raw.ask(request(8, service::ReserveWrite{1ULL << 40})),
               StatusCode::kInvalidArgument, "needs protocol version 3");
  auto ok = raw.ask(request(9, service::Heartbeat{}));
  ASSERT_TRUE(ok.is_ok() && std::holds_alternative<service::Reply>(*ok));
  ASSERT_TRUE(good->heartbeat().is_ok());
  EXPECT_GE(stat_of(*good, "bad_messages_total"), 7);
}

TEST_F(DaemonTest, WriteReservationsCanBeGivenBackAndOnlyOnce) {
  RawPeer raw(daemon_->endpoint());
  auto hi = raw.ask(request(1, service::Hello{{3}, "raw"}));
  ASSERT_TRUE(hi.is_ok() && std::holds_alternative<service::Reply>(*hi));
  auto reserved = raw.ask(request(2, service::ReserveWrite{10000}, 3));
  ASSERT_TRUE(reserved.is_ok());
  const auto* r = std::get_if<service::Reply>(&*reserved);
  ASSERT_TRUE(r && r->offset);
  EXPECT_EQ(*r->offset % 4096, 0u);
  auto c = client();
  ASSERT_TRUE(c);
  EXPECT_EQ(stat_of(*c, "write_region_used_bytes"), 12288);
  auto back = raw.ask(request(3, service::AbortWrite{*r->offset}, 3));
  ASSERT_TRUE(back.is_ok() && std::holds_alternative<service::Reply>(*back));
  expect_error(raw.ask(request(4, service::AbortWrite{*r->offset}, 3)), StatusCode::kInvalidArgument,
               "not a write reservation");
  EXPECT_EQ(stat_of(*c, "write_region_used_bytes"), 0);
}

TEST(DaemonConfigProcessTest, ABadConfigurationIsRefusedNamingTheField) {
  const std::string dir = ::testing::TempDir() + "tkvd-badcfg-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string config = dir + "/tempokvd.toml";
  {
    std::ofstream f(config);
    f << "[tier]\ncapacity_bytes = \"64MiB\"\nbudget_bytes = \"128MiB\"\n";
  }
  service::SpawnOptions o;
  o.binary = TEMPOKVD_PATH;
  o.data_dir = dir + "/data";
  o.extra_args = {"--config", config};
  o.log_path = dir + "/stderr.log";
  auto d = service::SpawnedDaemon::start(o);
  ASSERT_FALSE(d.is_ok());
  EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition) << d.status().to_string();
  std::ifstream log(o.log_path);
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("tier.budget_bytes"));
  std::filesystem::remove_all(dir);
}

TEST(DaemonStartTest, ATierLargerThanItsFilesystemFailsAtStartNamingTheSetting) {
  struct statvfs shm {};
  ASSERT_EQ(statvfs("/dev/shm", &shm), 0);
  // Whole MiB, 1 GiB more than /dev/shm holds: tmpfs refuses such an allocation at once.
  const uint64_t tier = ((uint64_t(shm.f_blocks) * shm.f_frsize >> 20) + 1024) << 20;
  const std::string dir = ::testing::TempDir() + "tkvd-bigtier-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  DaemonProcess daemon(dir, {"--set", "tier.capacity_bytes=" + std::to_string(tier)});
  daemon.log_to(dir + "/tempokvd.log");
  EXPECT_FALSE(daemon.start()) << "a " << (tier >> 20) << " MiB tier started on /dev/shm";
  std::stringstream log;
  log << std::ifstream(dir + "/tempokvd.log").rdbuf();
  EXPECT_THAT(log.str(), HasSubstr("tier.capacity_bytes")) << log.str();
  EXPECT_THAT(log.str(), HasSubstr("No space left")) << log.str();
  std::filesystem::remove_all(dir);
}

// The policy picks the provider's issue order (issue_order_of()): a baseline's reads by commit,
// TempoKV's by use; the start line says which the daemon runs.
TEST(DaemonStartTest, ThePolicyPicksTheIssueOrderAndTheStartLineSaysIt) {
  for (const auto& [policy, order] : {std::pair<std::string, std::string>{"immediate", "commit"},
                                      {"tempokv", "use"},
                                      {"tempokv-commit-order", "commit"}}) {
    SCOPED_TRACE(policy);
    const std::string dir =
        ::testing::TempDir() + "tkvd-order-" + policy + "-" + std::to_string(getpid());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    DaemonProcess daemon(dir, {"--set", "controller.policy=" + policy});
    daemon.log_to(dir + "/tempokvd.log");
    ASSERT_TRUE(daemon.start());
    std::stringstream log;
    log << std::ifstream(dir + "/tempokvd.log").rdbuf();
    EXPECT_THAT(log.str(), HasSubstr("; policy " + policy + " (reads issued by " + order + ")"))
        << log.str();
    EXPECT_EQ(daemon.stop(), 0);
    std::filesystem::remove_all(dir);
  }
}

// The body of GET /metrics from 127.0.0.1:port ("" when it fails).
std::string get_metrics(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  const std::string req = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      write(fd, req.data(), req.size()) == ssize_t(req.size())) {
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, size_t(n));
  }
  close(fd);
  const size_t body = out.find("\r\n\r\n");
  return body == std::string::npos ? "" : out.substr(body + 4);
}

TEST(DaemonMetricsTest, ReplyLatencyIsASummaryWithSumAndCountAndEveryFamilyHasOneType) {
  const std::string dir = ::testing::TempDir() + "tkvd-metrics-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  const uint16_t port = static_cast<uint16_t>(30000 + getpid() % 20000);
  DaemonProcess daemon(dir);
  daemon.serve_metrics("127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(daemon.start());
  auto c = daemon.connect();
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_TRUE((*c)->heartbeat().is_ok());
  const std::string text = get_metrics(port);
  EXPECT_THAT(text, HasSubstr("# TYPE tempokv_reply_latency_seconds summary\n"));
  EXPECT_THAT(text, HasSubstr("tempokv_reply_latency_seconds{quantile=\"0.99\"} "));
  EXPECT_THAT(text, HasSubstr("\ntempokv_reply_latency_seconds_sum "));
  EXPECT_THAT(text, HasSubstr("\ntempokv_reply_latency_seconds_count "));
  // promtool's rules: one TYPE per family, never one for a summary's _sum or _count.
  std::set<std::string> families;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    const std::string name = line.substr(7, line.find(' ', 7) - 7);
    EXPECT_TRUE(families.insert(name).second) << "two TYPE lines for " << name;
  }
  EXPECT_FALSE(families.count("tempokv_reply_latency_seconds_sum"));
  ASSERT_TRUE((*c)->bye().is_ok());
  EXPECT_EQ(daemon.stop(), 0);
  std::filesystem::remove_all(dir);
}

// A value of the exposition ("" text or no such line: NaN).
double metric(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? std::nan("") : std::stod(text.substr(at + name.size() + 2));
}

TEST(DaemonMetricsTest, ReplyLatencyCountsTheHandlingOfTheRequest) {
  // The executor's clock stands still within an event; the reply latency must still count the
  // time the daemon spent decoding and answering, not only the wait before it began.
  const std::string dir = ::testing::TempDir() + "tkvd-latency-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  const uint16_t port = static_cast<uint16_t>(30000 + (getpid() + 7) % 20000);
  DaemonProcess daemon(dir);
  daemon.serve_metrics("127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(daemon.start());
  auto c = daemon.connect();
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  std::vector<Key> keys;
  for (uint64_t i = 0; i < 16384; ++i) keys.push_back(Key{7, i + 1});
  using Clock = std::chrono::steady_clock;
  constexpr int kRounds = 20;
  auto timed = [&](auto&& call) {
    const auto start = Clock::now();
    for (int i = 0; i < kRounds; ++i) call();
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  const double heartbeats_s = timed([&] { ASSERT_TRUE((*c)->heartbeat().is_ok()); });
  const double before = metric(get_metrics(port), "tempokv_reply_latency_seconds_sum");
  const double lookups_s = timed([&] { ASSERT_TRUE((*c)->lookup(keys).is_ok()); });
  const double counted = metric(get_metrics(port), "tempokv_reply_latency_seconds_sum") - before;
  // What the lookups cost beyond a bare round trip is the daemon's handling, less what the
  // client spends encoding and decoding; at least a third of it is counted.
  EXPECT_GE(counted, (lookups_s - heartbeats_s) / 3)
      << "lookups " << lookups_s << " s, heartbeats " << heartbeats_s << " s, counted " << counted
      << " s";
  ASSERT_TRUE((*c)->bye().is_ok());
  EXPECT_EQ(daemon.stop(), 0);
  std::filesystem::remove_all(dir);
}

TEST_F(DaemonTest, ASecondDaemonOnTheSameDataDirRefusesToStartAndTheFirstServesOn) {
  auto c = client();
  ASSERT_TRUE(c);
  DaemonProcess second(dir_);  // on tcp: its start cannot touch the first one's socket file
  second.use_tcp(static_cast<uint16_t>(40000 + getpid() % 20000));
  EXPECT_FALSE(second.start()) << "a second tempokvd ran on the same data directory";
  EXPECT_NE(second.stop(), 0);
  // The first daemon still answers on its socket.
  EXPECT_TRUE(c->heartbeat().is_ok());
  auto other = client();
  EXPECT_TRUE(other && other->heartbeat().is_ok());
}

TEST(DaemonTcpTest, ServesOnTcpLoopback) {
  const std::string dir = ::testing::TempDir() + "tkvd-tcp-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  DaemonProcess daemon(dir);
  daemon.use_tcp(static_cast<uint16_t>(20000 + getpid() % 20000));
  ASSERT_TRUE(daemon.start());
  auto c = daemon.connect();
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_TRUE((*c)->put(Key{3, 4}, TokenRange{0, 16}, payload(9)).is_ok());
  auto sizes = (*c)->lookup(std::vector<Key>{Key{3, 4}});
  ASSERT_TRUE(sizes.is_ok());
  EXPECT_EQ(*sizes, (std::vector<uint64_t>{kObject}));
  ASSERT_TRUE((*c)->bye().is_ok());
  EXPECT_EQ(daemon.stop(), 0);
  std::filesystem::remove_all(dir);
}

TEST_F(DaemonTest, RestartFindsTheStoresKvAgain) {
  std::vector<ManifestEntry> m;
  {
    auto c = client();
    ASSERT_TRUE(c);
    m = put_objects(*c, 500, 3);
    ASSERT_TRUE(c->bye().is_ok());
  }
  ASSERT_EQ(daemon_->stop(), 0);
  daemon_ = std::make_unique<DaemonProcess>(dir_);
  ASSERT_TRUE(daemon_->start());
  auto c = client();
  ASSERT_TRUE(c);
  std::vector<Key> keys;
  for (const auto& e : m) keys.push_back(e.key);
  auto sizes = c->lookup(keys);
  ASSERT_TRUE(sizes.is_ok());
  EXPECT_EQ(*sizes, (std::vector<uint64_t>{kObject, kObject, kObject}));
  stage(*c, 1, m);
  expect_bytes(*c, 1, m);
  ASSERT_TRUE(c->begin_transfer(1).is_ok());
  ASSERT_TRUE(c->end_transfer(1).is_ok());
}

}  // namespace
}  // namespace tempokv::testing
