// io_uring specifics: registered buffers and files, and a request bigger than the ring's queue.
#include "ssd/uring_engine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cerrno>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/aligned_buffer.h"
#include "common/units.h"
#include "executor/work_gate.h"
#include "ssd/ssd_test_util.h"

namespace tempokv {
namespace {

using testing::fill_pattern;
using testing::matches_pattern;
using testing::run_ticking;
using testing::run_until;
using testing::TempFile;

class UringEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = std::make_unique<TempFile>(true);
    if (file_->direct_refused()) GTEST_SKIP() << "filesystem refuses O_DIRECT: " << file_->error();
    ASSERT_GE(file_->fd(), 0) << file_->error();
    auto engine = UringEngine::create(ex_, SsdEngineOptions{});
    if (!engine.is_ok()) GTEST_SKIP() << "io_uring unusable: " << engine.status().to_string();
    engine_ = std::move(engine).value();
    auto id = engine_->add_file(file_->fd());
    ASSERT_TRUE(id.is_ok());
    file_id_ = *id;
  }
  void TearDown() override { engine_.reset(); }

  // Replaces the engine with one made with `options` (the file re-added).
  void remake(const SsdEngineOptions& options) {
    engine_.reset();
    auto engine = UringEngine::create(ex_, options);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    engine_ = std::move(engine).value();
    auto id = engine_->add_file(file_->fd());
    ASSERT_TRUE(id.is_ok());
    file_id_ = *id;
  }
  // Writes the pattern into [0, bytes) of the file.
  void prepare_file(size_t bytes) {
    auto buf = AlignedBuffer::allocate(bytes);
    ASSERT_TRUE(buf.is_ok());
    fill_pattern(buf->data(), 0, bytes);
    ASSERT_EQ(pwrite(file_->fd(), buf->data(), bytes, 0), static_cast<ssize_t>(bytes));
  }

  Result<size_t> do_read(uint64_t offset, void* buf, size_t len) {
    std::optional<Result<size_t>> got;
    engine_->read(file_id_, offset, buf, len, [&](Result<size_t> r) { got = std::move(r); });
    if (!run_until(ex_, [&] { return got.has_value(); })) return Status::internal("timed out");
    return std::move(*got);
  }
  Result<size_t> do_write(uint64_t offset, const void* buf, size_t len) {
    std::optional<Result<size_t>> got;
    engine_->write(file_id_, offset, buf, len, [&](Result<size_t> r) { got = std::move(r); });
    if (!run_until(ex_, [&] { return got.has_value(); })) return Status::internal("timed out");
    return std::move(*got);
  }

  RealExecutor ex_;
  std::unique_ptr<TempFile> file_;
  std::unique_ptr<UringEngine> engine_;
  FileId file_id_ = 0;
};

TEST_F(UringEngineTest, RegisteredBufferTransfersUseFixedOpcodes) {
  if (geteuid() != 0) GTEST_SKIP() << "fixed buffers need RLIMIT_MEMLOCK headroom (run as root)";
  ASSERT_TRUE(engine_->buffers_registered());
  auto buf = AlignedBuffer::allocate(1 * kMiB);
  ASSERT_TRUE(buf.is_ok());
  ASSERT_TRUE(engine_->register_buffer(buf->data(), buf->size()).is_ok());
  fill_pattern(buf->data(), 0, 256 * kKiB);
  auto w = do_write(0, buf->data(), 256 * kKiB);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  // Read back into another part of the same registered region.
  auto r = do_read(0, buf->data() + 512 * kKiB, 256 * kKiB);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(*r, 256 * kKiB);
  EXPECT_TRUE(matches_pattern(buf->data() + 512 * kKiB, 0, 256 * kKiB));
  EXPECT_EQ(engine_->stats().fixed_buffer_ios, 2u);

  engine_->unregister_buffer(buf->data());
  r = do_read(0, buf->data(), 4096);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(engine_->stats().fixed_buffer_ios, 2u);  // unregistered: a plain read
}

TEST_F(UringEngineTest, BufferOutsideEveryRegisteredRegionUsesPlainReads) {
  auto registered = AlignedBuffer::allocate(64 * kKiB);
  auto plain = AlignedBuffer::allocate(64 * kKiB);
  ASSERT_TRUE(registered.is_ok() && plain.is_ok());
  ASSERT_TRUE(engine_->register_buffer(registered->data(), registered->size()).is_ok());
  fill_pattern(plain->data(), 0, 64 * kKiB);
  ASSERT_TRUE(do_write(0, plain->data(), 64 * kKiB).is_ok());
  auto r = do_read(0, plain->data(), 64 * kKiB);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(engine_->stats().fixed_buffer_ios, 0u);
  engine_->unregister_buffer(registered->data());
}

TEST_F(UringEngineTest, AddedFilesAreRegisteredWithTheRing) {
  EXPECT_TRUE(engine_->files_registered());
  // The id is reused after remove_file, and the re-registered slot still works.
  engine_->remove_file(file_id_);
  auto id = engine_->add_file(file_->fd());
  ASSERT_TRUE(id.is_ok());
  EXPECT_EQ(*id, file_id_);
  auto buf = AlignedBuffer::allocate(4096);
  ASSERT_TRUE(buf.is_ok());
  fill_pattern(buf->data(), 0, 4096);
  auto w = do_write(0, buf->data(), 4096);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_EQ(*w, 4096u);
}

TEST_F(UringEngineTest, AddFileRejectsNegativeDescriptor) {
  auto id = engine_->add_file(-1);
  ASSERT_FALSE(id.is_ok());
  EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(UringEngineTest, IoErrorFromTheKernelNamesTheRequest) {
  // A read-only descriptor makes the kernel fail the write with EBADF.
  int ro = open(file_->path().c_str(), O_RDONLY | O_DIRECT);
  ASSERT_GE(ro, 0);
  auto id = engine_->add_file(ro);
  ASSERT_TRUE(id.is_ok());
  auto buf = AlignedBuffer::allocate(4096);
  ASSERT_TRUE(buf.is_ok());
  std::optional<Result<size_t>> got;
  engine_->write(*id, 8192, buf->data(), 4096, [&](Result<size_t> r) { got = std::move(r); });
  ASSERT_TRUE(run_until(ex_, [&] { return got.has_value(); }));
  ASSERT_FALSE(got->is_ok());
  EXPECT_EQ(got->status().code(), StatusCode::kIOError);
  EXPECT_NE(got->status().message().find("uring write of file " + std::to_string(*id) +
                                         " at offset 8192, 4096 bytes"),
            std::string::npos)
      << got->status().message();
  engine_->remove_file(*id);
  close(ro);
}

// The kernel answers EAGAIN five times: the caller's thread (the control loop) tries once and
// returns at once; the completion thread retries until the kernel takes the write.
void expect_refused_submit_retried_off_the_callers_thread(UringEngine& engine, FileId file,
                                                          RealExecutor& ex) {
  std::mutex mu;
  std::vector<std::thread::id> callers;
  int refusals = 5;
  engine.set_submit_for_testing([&](io_uring* ring) {
    std::lock_guard<std::mutex> lock(mu);
    callers.push_back(std::this_thread::get_id());
    if (refusals > 0) {
      --refusals;
      return -EAGAIN;
    }
    return io_uring_submit(ring);
  });
  auto buf = AlignedBuffer::allocate(64 * kKiB);
  ASSERT_TRUE(buf.is_ok());
  fill_pattern(buf->data(), 0, 64 * kKiB);
  std::optional<Result<size_t>> got;
  engine.write(file, 0, buf->data(), 64 * kKiB, [&](Result<size_t> r) { got = r; });
  ASSERT_TRUE(run_until(ex, [&] { return got.has_value(); }));
  ASSERT_TRUE(got->is_ok()) << got->status().to_string();
  EXPECT_EQ(**got, 64 * kKiB);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_GE(callers.size(), 6u);
  EXPECT_EQ(callers[0], std::this_thread::get_id());
  EXPECT_EQ(std::count(callers.begin(), callers.end(), std::this_thread::get_id()), 1)
      << "the caller's thread retried a refused submit";
}

TEST_F(UringEngineTest, RefusedSubmitIsRetriedOffTheCallersThread) {
  expect_refused_submit_retried_off_the_callers_thread(*engine_, file_id_, ex_);
}

TEST_F(UringEngineTest, WithoutExtArgARefusedSubmitIsRetriedOffTheCallersThread) {
  // On a kernel without IORING_FEAT_EXT_ARG the completion thread polls the ring's descriptor
  // instead of waiting with a timeout; the caller still never waits for the kernel.
  engine_->disable_ext_arg_for_testing();
  expect_refused_submit_retried_off_the_callers_thread(*engine_, file_id_, ex_);
}

TEST_F(UringEngineTest, WithoutExtArgReadsComplete) {
  engine_->disable_ext_arg_for_testing();
  prepare_file(256 * kKiB);
  auto buf = AlignedBuffer::allocate(256 * kKiB);
  ASSERT_TRUE(buf.is_ok());
  int answered = 0;
  for (size_t off = 0; off < 256 * kKiB; off += 16 * kKiB) {
    engine_->read(file_id_, off, buf->data() + off, 16 * kKiB, [&](Result<size_t> r) {
      EXPECT_TRUE(r.is_ok()) << r.status().to_string();
      ++answered;
    });
  }
  ASSERT_TRUE(run_until(ex_, [&] { return answered == 16; }));
  EXPECT_TRUE(matches_pattern(buf->data(), 0, 256 * kKiB));
}

TEST_F(UringEngineTest, ReadWhoseHookIsSlowDoesNotHoldUpTheOthers) {
  // The first read's hook (a checksum of a large object, say) is held; the reads behind it are
  // reaped, hooked and answered meanwhile.
  prepare_file(64 * kKiB);
  auto buf = AlignedBuffer::allocate(64 * kKiB);
  ASSERT_TRUE(buf.is_ok());
  testing::Gate gate;
  gate.hold("hook");
  std::optional<Result<size_t>> slow, plain, hooked;
  engine_->read(
      file_id_, 0, buf->data(), 16 * kKiB, [&](Result<size_t> r) { slow = std::move(r); },
      [&](size_t) {
        gate.arrive("hook");
        return Status::ok();
      });
  ASSERT_TRUE(run_ticking(ex_, [&] { return gate.waiting() == 1; }));
  engine_->read(file_id_, 16 * kKiB, buf->data() + 16 * kKiB, 16 * kKiB,
                [&](Result<size_t> r) { plain = std::move(r); });
  engine_->read(
      file_id_, 32 * kKiB, buf->data() + 32 * kKiB, 32 * kKiB,
      [&](Result<size_t> r) { hooked = std::move(r); }, [](size_t) { return Status::ok(); });
  ASSERT_TRUE(run_until(ex_, [&] { return plain && hooked; }));
  EXPECT_FALSE(slow.has_value()) << "the held hook's read was answered";
  EXPECT_EQ(engine_->stats().in_flight, 1u);
  gate.open();
  ASSERT_TRUE(run_until(ex_, [&] { return slow.has_value(); }));
  for (auto* r : {&slow, &plain, &hooked}) ASSERT_TRUE((*r)->is_ok()) << (*r)->status().to_string();
  EXPECT_EQ(**hooked, 32 * kKiB);
  EXPECT_TRUE(matches_pattern(buf->data(), 0, 64 * kKiB));
}

TEST_F(UringEngineTest, HooksOfReadsThatCompleteTogetherRunAtOnceAndKeepTheirOwnResults) {
  // Four hook threads, four reads: every hook waits until all four run at the same time; the
  // third one's error replaces only its own result.
  SsdEngineOptions o;
  o.hook_threads = 4;
  ASSERT_NO_FATAL_FAILURE(remake(o));
  prepare_file(64 * kKiB);
  auto buf = AlignedBuffer::allocate(64 * kKiB);
  ASSERT_TRUE(buf.is_ok());
  testing::Gate gate;
  gate.hold("hook");
  std::vector<std::optional<Result<size_t>>> got(4);
  for (size_t k = 0; k < 4; ++k) {
    engine_->read(
        file_id_, k * 16 * kKiB, buf->data() + k * 16 * kKiB, 16 * kKiB,
        [&got, k](Result<size_t> r) { got[k] = std::move(r); },
        [&gate, k](size_t) {
          gate.arrive("hook");
          return k == 2 ? Status::corruption("checksum mismatch") : Status::ok();
        });
  }
  ASSERT_TRUE(run_ticking(ex_, [&] { return gate.waiting() == 4; }))
      << gate.waiting() << " of 4 hooks ran at once";
  gate.open();
  ASSERT_TRUE(run_until(ex_, [&] { return got[0] && got[1] && got[2] && got[3]; }));
  for (size_t k = 0; k < 4; ++k) {
    if (k == 2) {
      EXPECT_EQ(got[k]->status().code(), StatusCode::kCorruption);
    } else {
      ASSERT_TRUE(got[k]->is_ok()) << got[k]->status().to_string();
      EXPECT_EQ(**got[k], 16 * kKiB);
    }
  }
}

TEST_F(UringEngineTest, DestructionWaitsForHooksStillRunning) {
  // Twelve hooked reads on two hook threads, each hook 10 ms long: destroying the engine at once
  // returns only when every hook has run and every callback is posted; none is lost.
  prepare_file(12 * 4 * kKiB);
  auto buf = AlignedBuffer::allocate(12 * 4 * kKiB);
  ASSERT_TRUE(buf.is_ok());
  std::atomic<int> hooks_done{0};
  std::vector<std::optional<Result<size_t>>> got(12);
  for (size_t k = 0; k < 12; ++k) {
    engine_->read(
        file_id_, k * 4 * kKiB, buf->data() + k * 4 * kKiB, 4 * kKiB,
        [&got, k](Result<size_t> r) { got[k] = std::move(r); },
        [&hooks_done, k](size_t) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          ++hooks_done;
          return k == 7 ? Status::corruption("checksum mismatch") : Status::ok();
        });
  }
  engine_.reset();
  EXPECT_EQ(hooks_done.load(), 12);
  size_t answered = 0;
  ASSERT_TRUE(run_until(ex_, [&] {
    answered = std::count_if(got.begin(), got.end(), [](const auto& r) { return r.has_value(); });
    return answered == 12;
  }));
  for (size_t k = 0; k < 12; ++k) {
    EXPECT_EQ(got[k]->status().code(), k == 7 ? StatusCode::kCorruption : StatusCode::kOk) << k;
  }
  EXPECT_TRUE(matches_pattern(buf->data(), 0, 12 * 4 * kKiB));
}

TEST_F(UringEngineTest, ZeroHookThreadsRunHooksOnTheCompletionThread) {
  SsdEngineOptions o;
  o.hook_threads = 0;
  ASSERT_NO_FATAL_FAILURE(remake(o));
  prepare_file(8 * kKiB);
  auto buf = AlignedBuffer::allocate(8 * kKiB);
  ASSERT_TRUE(buf.is_ok());
  std::mutex mu;
  std::vector<std::thread::id> ran_on;
  std::optional<Result<size_t>> got[2];
  for (size_t k = 0; k < 2; ++k) {
    engine_->read(
        file_id_, k * 4 * kKiB, buf->data() + k * 4 * kKiB, 4 * kKiB,
        [&got, k](Result<size_t> r) { got[k] = std::move(r); },
        [&](size_t) {
          std::lock_guard<std::mutex> lock(mu);
          ran_on.push_back(std::this_thread::get_id());
          return Status::ok();
        });
  }
  ASSERT_TRUE(run_until(ex_, [&] { return got[0] && got[1]; }));
  ASSERT_TRUE(got[0]->is_ok() && got[1]->is_ok());
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(ran_on.size(), 2u);
  EXPECT_EQ(ran_on[0], ran_on[1]);
  EXPECT_NE(ran_on[0], std::this_thread::get_id());
}

}  // namespace
}  // namespace tempokv
