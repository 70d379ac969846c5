// The factory, option validation and kind names.
#include "ssd/ssd_engine.h"

#include <gtest/gtest.h>

#include "executor/real_executor.h"
#include "executor/sim_executor.h"

namespace tempokv {
namespace {

TEST(ParseSsdEngineKind, AcceptsTheThreeNames) {
  EXPECT_EQ(*parse_ssd_engine_kind("uring"), SsdEngineKind::kUring);
  EXPECT_EQ(*parse_ssd_engine_kind("threadpool"), SsdEngineKind::kThreadPool);
  EXPECT_EQ(*parse_ssd_engine_kind("sim"), SsdEngineKind::kSimulated);
  for (auto kind : {SsdEngineKind::kUring, SsdEngineKind::kThreadPool, SsdEngineKind::kSimulated}) {
    EXPECT_EQ(*parse_ssd_engine_kind(ssd_engine_kind_name(kind)), kind);
  }
}

TEST(ParseSsdEngineKind, RejectsOtherNamesNamingTheText) {
  auto kind = parse_ssd_engine_kind("spdk");
  ASSERT_FALSE(kind.is_ok());
  EXPECT_EQ(kind.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(kind.status().message().find("'spdk'"), std::string::npos);
}

TEST(SsdEngineOptions, DefaultsAreValid) { EXPECT_TRUE(SsdEngineOptions{}.validate().is_ok()); }

TEST(SsdEngineOptions, ValidateNamesTheBadField) {
  auto expect_names = [](SsdEngineOptions o, const std::string& field) {
    Status st = o.validate();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << field;
    EXPECT_NE(st.message().find("SsdEngineOptions." + field), std::string::npos) << st.message();
  };
  SsdEngineOptions o;
  o.queue_depth = 0;
  expect_names(o, "queue_depth");
  o = {};
  o.threads = 0;
  expect_names(o, "threads");
  o = {};
  o.sim_latency = Duration(-1);
  expect_names(o, "sim_latency");
  o = {};
  o.sim_read_bytes_per_s = 0;
  expect_names(o, "sim_read_bytes_per_s");
  o = {};
  o.sim_write_bytes_per_s = -5;
  expect_names(o, "sim_write_bytes_per_s");
  o = {};
  o.sim_max_concurrency = 0;
  expect_names(o, "sim_max_concurrency");
}

TEST(MakeSsdEngine, MakesTheKindAsked) {
  SimExecutor sim;
  RealExecutor real;
  SsdEngineOptions o;
  o.kind = SsdEngineKind::kSimulated;
  auto s = make_ssd_engine(sim, o);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ((*s)->name(), "sim");
  o.kind = SsdEngineKind::kThreadPool;
  o.direct = false;
  auto t = make_ssd_engine(real, o);
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ((*t)->name(), "threadpool");
  EXPECT_FALSE((*t)->direct());
  o.kind = SsdEngineKind::kUring;
  o.direct = true;
  auto u = make_ssd_engine(real, o);
  ASSERT_TRUE(u.is_ok());
  // io_uring where the kernel allows it, else the thread pool fallback.
  EXPECT_TRUE((*u)->name() == "uring" || (*u)->name() == "threadpool") << (*u)->name();
  EXPECT_TRUE((*u)->direct());
}

TEST(MakeSsdEngine, RejectsInvalidOptions) {
  SimExecutor sim;
  SsdEngineOptions o;
  o.kind = SsdEngineKind::kSimulated;
  o.sim_max_concurrency = 0;
  auto e = make_ssd_engine(sim, o);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tempokv
