// Service mode: the engine against a real tempokvd. Its runtime calls, its prefix lookup and its
// copies (from the daemon's shared fast tier) go through a ServiceClient attached to the loop;
// every restored chunk is checked against the content the KV was put with. With the progress
// reports waiting for their replies, and pipelined.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "engine/serving_engine.h"
#include "executor/real_executor.h"
#include "service/daemon_process.h"
#include "store/store_test_util.h"
#include "engine/real_workload.h"
#include "workload/tokens.h"

namespace tempokv::testing {
namespace {

class EngineService : public ::testing::TestWithParam<bool> {};  // pipeline_reports?

TEST_P(EngineService, RestoresVerifiedBytesThroughTempokvd) {
  if (!std::filesystem::exists(TEMPOKVD_PATH)) GTEST_SKIP() << TEMPOKVD_PATH << " is not built";
  auto profile = CostProfile::load(std::string(TEMPOKV_PROFILES_DIR) + "/cpu-small.json");
  ASSERT_TRUE(profile.is_ok()) << profile.status().to_string();
  const std::string dir =
      ::testing::TempDir() + "tkvd-engine-" + std::to_string(getpid()) + (GetParam() ? "-p" : "-b");
  std::filesystem::remove_all(dir);
  // Slots of one chunk (1 MiB), as the evaluation sizes the tier.
  DaemonProcess daemon(
      dir, {"--set", "tier.slot_bytes=1MiB", "--set",
            "controller.profile=" + std::string(TEMPOKV_PROFILES_DIR) + "/cpu-small.json"});
  ASSERT_TRUE(daemon.start()) << "tempokvd did not start";

  auto reqs = small_real_workload(*profile);
  {
    auto control = daemon.connect("", "precompute");
    ASSERT_TRUE(control.is_ok()) << control.status().to_string();
    std::vector<std::byte> bytes;
    for (const Request& r : reqs) {
      for (uint32_t i = 0; i < r.precomputed_chunks; ++i) {
        const CachedChunk& c = r.chunks[i];
        bytes.resize(c.bytes);
        fill_chunk_bytes(c.key, bytes);
        Status st = (*control)->put(c.key, c.tokens, bytes);
        ASSERT_TRUE(st.is_ok()) << st.to_string();
      }
    }
    ASSERT_TRUE((*control)->bye().is_ok());
  }

  RealExecutor ex;
  ClientOptions co;
  co.endpoint = daemon.endpoint();
  co.name = "engine";
  co.pipeline_reports = GetParam();
  auto client = ServiceClient::connect(co);
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();
  ASSERT_TRUE((*client)->attach(ex).is_ok());
  TransferEngineOptions xo;
  xo.kind = TransferEngineKind::kEmulated;
  xo.pin_with_mlock = false;
  auto transfer = make_transfer_engine(ex, xo).value();
  EngineOptions eo;
  eo.verify_bytes = true;
  EngineContext c;
  c.executor = &ex;
  c.transfer = transfer.get();
  c.service = client->get();
  auto engine = ServingEngine::create(c, *profile, eo);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  EXPECT_EQ((*engine)->adapter(), nullptr);  // the daemon's adapter answers
  ASSERT_TRUE((*engine)->submit(reqs, ex.now()).is_ok());
  ASSERT_TRUE(run_until(ex, [&] { return (*engine)->done(); }));

  uint64_t hit_chunks = 0;
  for (const RequestRecord& r : (*engine)->records()) {
    EXPECT_TRUE(r.path == RequestPath::kStaged || r.path == RequestPath::kOrdinary)
        << r.id << " " << r.failure;
    EXPECT_GT(r.hit_chunks, 0u);
    EXPECT_EQ(r.verified_chunks, r.hit_chunks);
    EXPECT_FALSE(r.committed.has_value());  // no claim timeline through the service
    hit_chunks += r.hit_chunks;
  }
  const EngineStats s = (*engine)->stats();
  EXPECT_EQ(s.finished, reqs.size());
  EXPECT_EQ(s.verified_chunks, hit_chunks);
  EXPECT_EQ(s.mismatched_chunks, 0u);
  EXPECT_EQ(s.recomputes, 0u);
  EXPECT_GT((*client)->calls(), reqs.size());
  EXPECT_GT((*client)->call_seconds(), 0.0);
  auto stats = (*client)->stats();
  ASSERT_TRUE(stats.is_ok());
  EXPECT_EQ(stat(*stats, "claims_reported_total"), double(reqs.size()));
  // The stats call waited behind every report: their replies are in.
  EXPECT_EQ((*client)->late_errors(), 0u) << (*client)->last_late_error().to_string();

  engine->reset();
  EXPECT_TRUE((*client)->bye().is_ok());
  client->reset();
  EXPECT_EQ(daemon.stop(), 0);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Reports, EngineService, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "Pipelined" : "Waiting"; });

}  // namespace
}  // namespace tempokv::testing
