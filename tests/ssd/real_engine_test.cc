// The SsdEngine contract, checked on the engines that move real bytes through a real file.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "common/aligned_buffer.h"
#include "common/units.h"
#include "ssd/ssd_engine.h"
#include "ssd/ssd_test_util.h"

namespace tempokv {
namespace {

using testing::fill_pattern;
using testing::matches_pattern;
using testing::run_until;
using testing::TempFile;

struct EngineParam {
  SsdEngineKind kind;
  bool direct;
};

std::string param_name(const ::testing::TestParamInfo<EngineParam>& info) {
  return std::string(ssd_engine_kind_name(info.param.kind) == "uring" ? "Uring" : "ThreadPool") +
         (info.param.direct ? "Direct" : "Buffered");
}

class RealEngineTest : public ::testing::TestWithParam<EngineParam> {
 protected:
  void SetUp() override {
    file_ = std::make_unique<TempFile>(GetParam().direct);
    if (file_->direct_refused()) GTEST_SKIP() << "filesystem refuses O_DIRECT: " << file_->error();
    ASSERT_GE(file_->fd(), 0) << file_->error();
  }

  std::unique_ptr<SsdEngine> make(uint32_t queue_depth = 256) {
    SsdEngineOptions options;
    options.kind = GetParam().kind;
    options.direct = GetParam().direct;
    options.queue_depth = queue_depth;
    auto engine = make_ssd_engine(ex_, options);
    EXPECT_TRUE(engine.is_ok()) << engine.status().to_string();
    return engine.is_ok() ? std::move(engine).value() : nullptr;
  }

  // Writes the pattern into [0, bytes) of the file without going through an engine.
  void prepare_file(size_t bytes) {
    auto buf = AlignedBuffer::allocate(bytes);
    ASSERT_TRUE(buf.is_ok());
    fill_pattern(buf->data(), 0, bytes);
    ASSERT_EQ(pwrite(file_->fd(), buf->data(), bytes, 0), static_cast<ssize_t>(bytes));
  }

  RealExecutor ex_;
  std::unique_ptr<TempFile> file_;
};

TEST_P(RealEngineTest, WriteSyncAndReadRoundTripBytes) {
  auto engine = make();
  ASSERT_NE(engine, nullptr);
  auto id = engine->add_file(file_->fd());
  ASSERT_TRUE(id.is_ok());
  constexpr size_t kBytes = 1 * kMiB;
  auto out = AlignedBuffer::allocate(kBytes);
  auto in = AlignedBuffer::allocate(kBytes);
  ASSERT_TRUE(out.is_ok() && in.is_ok());
  fill_pattern(out->data(), 8192, kBytes);

  std::vector<Result<size_t>> results;
  auto record = [&](Result<size_t> r) { results.push_back(std::move(r)); };
  engine->write(*id, 8192, out->data(), kBytes, record);
  ASSERT_TRUE(run_until(ex_, [&] { return results.size() == 1; }));
  engine->sync(*id, record);
  ASSERT_TRUE(run_until(ex_, [&] { return results.size() == 2; }));
  engine->read(*id, 8192, in->data(), kBytes, record);
  ASSERT_TRUE(run_until(ex_, [&] { return results.size() == 3; }));

  ASSERT_TRUE(results[0].is_ok()) << results[0].status().to_string();
  EXPECT_EQ(*results[0], kBytes);
  ASSERT_TRUE(results[1].is_ok()) << results[1].status().to_string();
  EXPECT_EQ(*results[1], 0u);
  ASSERT_TRUE(results[2].is_ok()) << results[2].status().to_string();
  EXPECT_EQ(*results[2], kBytes);
  EXPECT_TRUE(matches_pattern(in->data(), 8192, kBytes));
  SsdEngineStats s = engine->stats();
  EXPECT_EQ(s.reads, 1u);
  EXPECT_EQ(s.writes, 1u);
  EXPECT_EQ(s.syncs, 1u);
  EXPECT_EQ(s.bytes_read, kBytes);
  EXPECT_EQ(s.bytes_written, kBytes);
  EXPECT_EQ(s.errors, 0u);
  EXPECT_EQ(s.in_flight, 0u);
}

TEST_P(RealEngineTest, FiveHundredTwelveConcurrentReadsAllCompleteWithCorrectData) {
  constexpr size_t kReads = 512, kChunk = 64 * kKiB;
  prepare_file(kReads * kChunk);
  // A shallow ring makes most requests wait in the overflow queue.
  auto engine = make(/*queue_depth=*/16);
  ASSERT_NE(engine, nullptr);
  auto id = engine->add_file(file_->fd());
  ASSERT_TRUE(id.is_ok());
  auto buf = AlignedBuffer::allocate(kReads * kChunk);
  ASSERT_TRUE(buf.is_ok());
  ASSERT_TRUE(engine->register_buffer(buf->data(), buf->size()).is_ok());

  size_t completed = 0, ok = 0;
  for (size_t i = 0; i < kReads; ++i) {
    // Reverse order so the file offset and the completion order do not line up.
    size_t k = kReads - 1 - i;
    engine->read(*id, k * kChunk, buf->data() + k * kChunk, kChunk, [&, k](Result<size_t> r) {
      ++completed;
      if (r.is_ok() && *r == kChunk &&
          matches_pattern(buf->data() + k * kChunk, k * kChunk, kChunk)) {
        ++ok;
      }
    });
  }
  ASSERT_TRUE(run_until(ex_, [&] { return completed == kReads; }));
  EXPECT_EQ(ok, kReads);
  EXPECT_EQ(engine->stats().bytes_read, kReads * kChunk);
  EXPECT_EQ(engine->stats().in_flight, 0u);
  engine->unregister_buffer(buf->data());
}

TEST_P(RealEngineTest, UnalignedRequestsFailWithInvalidArgumentNamingTheValue) {
  if (!GetParam().direct) GTEST_SKIP() << "buffered engines take any alignment";
  auto engine = make();
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->direct());
  auto id = engine->add_file(file_->fd());
  ASSERT_TRUE(id.is_ok());
  auto buf = AlignedBuffer::allocate(16 * kKiB);
  ASSERT_TRUE(buf.is_ok());
  std::vector<Status> got;
  auto record = [&](Result<size_t> r) { got.push_back(r.status()); };
  engine->read(*id, 100, buf->data(), 4096, record);
  engine->read(*id, 4096, buf->data(), 1000, record);
  engine->write(*id, 0, buf->data() + 1, 4096, record);
  ASSERT_TRUE(run_until(ex_, [&] { return got.size() == 3; }));
  for (const Status& st : got) EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(got[0].message().find("offset 100 is not a multiple of 4096"), std::string::npos)
      << got[0].message();
  EXPECT_NE(got[1].message().find("length 1000"), std::string::npos) << got[1].message();
  EXPECT_NE(got[2].message().find("buffer address"), std::string::npos) << got[2].message();
  EXPECT_EQ(engine->stats().errors, 3u);
}

TEST_P(RealEngineTest, UnknownFileIdFailsWithInvalidArgumentNamingIt) {
  auto engine = make();
  ASSERT_NE(engine, nullptr);
  auto buf = AlignedBuffer::allocate(4096);
  ASSERT_TRUE(buf.is_ok());
  std::optional<Status> got;
  engine->read(7, 0, buf->data(), 4096, [&](Result<size_t> r) { got = r.status(); });
  ASSERT_TRUE(run_until(ex_, [&] { return got.has_value(); }));
  EXPECT_EQ(got->code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got->message().find("file id 7"), std::string::npos) << got->message();
}

TEST_P(RealEngineTest, ReadPastEndOfFileReportsTheBytesBeforeIt) {
  prepare_file(12 * kKiB);
  auto engine = make();
  ASSERT_NE(engine, nullptr);
  auto id = engine->add_file(file_->fd());
  ASSERT_TRUE(id.is_ok());
  auto buf = AlignedBuffer::allocate(16 * kKiB);
  ASSERT_TRUE(buf.is_ok());
  std::vector<Result<size_t>> results;
  engine->read(*id, 8 * kKiB, buf->data(), 16 * kKiB,
               [&](Result<size_t> r) { results.push_back(std::move(r)); });
  ASSERT_TRUE(run_until(ex_, [&] { return results.size() == 1; }));
  engine->read(*id, 1 * kMiB, buf->data(), 4 * kKiB,
               [&](Result<size_t> r) { results.push_back(std::move(r)); });
  ASSERT_TRUE(run_until(ex_, [&] { return results.size() == 2; }));
  ASSERT_TRUE(results[0].is_ok()) << results[0].status().to_string();
  EXPECT_EQ(*results[0], 4 * kKiB);
  EXPECT_TRUE(matches_pattern(buf->data(), 8 * kKiB, 4 * kKiB));
  ASSERT_TRUE(results[1].is_ok());
  EXPECT_EQ(*results[1], 0u);
}

TEST_P(RealEngineTest, HookRunsOffTheLoopThreadAndItsErrorReplacesTheResult) {
  prepare_file(8 * kKiB);
  auto engine = make();
  ASSERT_NE(engine, nullptr);
  auto id = engine->add_file(file_->fd());
  ASSERT_TRUE(id.is_ok());
  auto buf = AlignedBuffer::allocate(8 * kKiB);
  ASSERT_TRUE(buf.is_ok());
  std::atomic<size_t> hook_bytes{0};
  std::atomic<bool> hook_on_loop{true};
  std::thread::id loop = std::this_thread::get_id();
  std::optional<Result<size_t>> first, second;
  engine->read(
      *id, 0, buf->data(), 4096, [&](Result<size_t> r) { first = std::move(r); },
      [&](size_t bytes) {
        hook_bytes = bytes;
        hook_on_loop = std::this_thread::get_id() == loop;
        return Status::ok();
      });
  engine->read(
      *id, 4096, buf->data() + 4096, 4096, [&](Result<size_t> r) { second = std::move(r); },
      [](size_t) { return Status::corruption("checksum mismatch"); });
  ASSERT_TRUE(run_until(ex_, [&] { return first && second; }));
  ASSERT_TRUE(first->is_ok());
  EXPECT_EQ(hook_bytes.load(), 4096u);
  EXPECT_FALSE(hook_on_loop.load());
  EXPECT_EQ(second->status().code(), StatusCode::kCorruption);
}

TEST_P(RealEngineTest, DestructionWaitsForInFlightReads) {
  constexpr size_t kReads = 64, kChunk = 64 * kKiB;
  prepare_file(kReads * kChunk);
  auto buf = AlignedBuffer::allocate(kReads * kChunk);
  ASSERT_TRUE(buf.is_ok());
  size_t ok = 0, completed = 0;
  {
    auto engine = make();
    ASSERT_NE(engine, nullptr);
    auto id = engine->add_file(file_->fd());
    ASSERT_TRUE(id.is_ok());
    for (size_t k = 0; k < kReads; ++k) {
      engine->read(*id, k * kChunk, buf->data() + k * kChunk, kChunk, [&](Result<size_t> r) {
        ++completed;
        if (r.is_ok() && *r == kChunk) ++ok;
      });
    }
  }  // the engine is gone; every callback must already be posted
  ASSERT_TRUE(run_until(ex_, [&] { return completed == kReads; }));
  EXPECT_EQ(ok, kReads);
  EXPECT_TRUE(matches_pattern(buf->data(), 0, kReads * kChunk));
}

INSTANTIATE_TEST_SUITE_P(Engines, RealEngineTest,
                         ::testing::Values(EngineParam{SsdEngineKind::kUring, true},
                                           EngineParam{SsdEngineKind::kThreadPool, true},
                                           EngineParam{SsdEngineKind::kThreadPool, false}),
                         param_name);

}  // namespace
}  // namespace tempokv
