// Crash consistency: a child process writes (and removes) objects and is killed with SIGKILL at a
// random moment; the parent reopens the store and checks that every listed object reads back
// byte-exact, every acknowledged put is there, every acknowledged remove holds, and verify finds
// nothing corrupt. Odd iterations write through the buffered thread pool engine, even ones with
// io_uring and O_DIRECT; in half of them (iter % 4 >= 2) the writer also keeps two gets of its
// acknowledged objects in flight, so the store holds most writes back (reads before writes) and the
// kill lands while puts wait in its queue. TEMPOKV_CRASH_ITERATIONS (default 50) and
// TEMPOKV_CRASH_SEED set the run; scripts/crash-soak runs it longer.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "store_test_util.h"

namespace tempokv::testing {
namespace {

// Op i puts key i, except every fifth op, which removes key i - 2.
bool is_remove(uint64_t i) { return i % 5 == 4; }
size_t object_bytes(uint64_t i) {
  if (i % 11 == 0) return 1 * kMiB + 5;  // long writes: a kill lands inside one more often
  if (i % 7 == 0) return 68 * kKiB;      // aligned source: the zero-copy path
  uint64_t s = i;
  return 1 + splitmix64(s) % 20000;
}

StoreOptions crash_options(const std::string& dir) {
  StoreOptions o;
  o.dir = dir;
  o.segment_bytes = 4 * kMiB;
  o.capacity_bytes = 1 * kGiB;
  o.max_object_bytes = 2 * kMiB;
  return o;
}

struct Ack {
  char op;  // 'P' put, 'R' remove, 'O' opened
  uint64_t index;
};

[[noreturn]] void run_writer(const std::string& dir, uint64_t first, int ack_fd, bool buffered,
                             bool reading) {
  RealExecutor ex;
  SsdEngineOptions eo;
  eo.threads = 2;
  // Buffered pwrite can be cut between pages by the kill: more torn records than O_DIRECT.
  if (buffered) {
    eo.kind = SsdEngineKind::kThreadPool;
    eo.direct = false;
  }
  auto engine = make_ssd_engine(ex, eo);
  if (!engine.is_ok()) _exit(2);
  auto store = Store::open(ex, **engine, crash_options(dir));
  if (!store.is_ok()) _exit(3);
  auto send = [&](char op, uint64_t i) {
    Ack a{op, i};
    if (write(ack_fd, &a, sizeof a) != sizeof a) _exit(4);
  };
  send('O', 0);
  std::map<uint64_t, AlignedBuffer> live;  // payloads must outlive their puts
  std::vector<uint64_t> acknowledged;      // what the readers get (a removed one: NotFound)
  uint64_t next = first;
  std::function<void()> issue = [&] {
    uint64_t i = next++;
    if (is_remove(i)) {
      (*store)->remove(test_key(i - 2), [&, i](Status st) {
        if (st.is_ok()) send('R', i - 2);
        issue();
      });
      return;
    }
    size_t n = object_bytes(i);
    AlignedBuffer& buf = live[i] = std::move(AlignedBuffer::allocate(n).value());
    fill_payload(i, buf.data(), n);
    (*store)->put(test_key(i), {0, 256}, buf.data(), n, [&, i](Status st) {
      if (!st.is_ok()) _exit(5);
      live.erase(i);
      acknowledged.push_back(i);
      send('P', i);
      issue();
    });
  };
  std::vector<AlignedBuffer> read_bufs;
  uint64_t draw = first;
  std::function<void(size_t)> read_one = [&](size_t slot) {
    if (acknowledged.empty()) {
      ex.after(std::chrono::microseconds(200), [&, slot] { read_one(slot); });
      return;
    }
    const uint64_t i = acknowledged[splitmix64(draw) % acknowledged.size()];
    (*store)->get(test_key(i), read_bufs[slot].data(), read_bufs[slot].size(),
                  [&, slot](Result<size_t> r) {
                    if (!r.is_ok() && r.status().code() != StatusCode::kNotFound) _exit(6);
                    read_one(slot);
                  });
  };
  for (size_t slot = 0; reading && slot < 2; ++slot) {
    read_bufs.push_back(std::move(AlignedBuffer::allocate(2 * kMiB + kBlockBytes).value()));
  }
  for (size_t slot = 0; slot < read_bufs.size(); ++slot) read_one(slot);
  for (int k = 0; k < 8; ++k) issue();  // 8 operations in flight
  ex.run();
  _exit(0);
}

TEST(StoreCrashTest, KilledWriterLeavesOnlyWholeObjectsAndKeepsAcknowledgedOnes) {
  const uint64_t iterations = env_or("TEMPOKV_CRASH_ITERATIONS", 50);
  std::mt19937_64 rng(env_or("TEMPOKV_CRASH_SEED", 20260101));
  std::unique_ptr<TempDir> dir;
  std::set<uint64_t> must_exist, must_not_exist;
  uint64_t killed_with_torn = 0, objects_checked = 0;
  for (uint64_t iter = 0; iter < iterations; ++iter) {
    if (iter % 5 == 0) {  // a few crashes pile up in one directory, then start afresh
      dir = std::make_unique<TempDir>();
      if (!dir->supports_direct()) GTEST_SKIP() << "no O_DIRECT under /var/tmp";
      must_exist.clear();
      must_not_exist.clear();
    }
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    uint64_t first = (iter + 1) * 1'000'000;
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      run_writer(dir->path(), first, fds[1], iter % 2 == 1, iter % 4 >= 2);
    }
    ::close(fds[1]);
    Ack a{};
    ASSERT_EQ(read(fds[0], &a, sizeof a), static_cast<ssize_t>(sizeof a))
        << "writer failed to open";
    ASSERT_EQ(a.op, 'O');
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 30000));
    kill(pid, SIGKILL);
    int wstatus = 0;
    waitpid(pid, &wstatus, 0);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "writer exited early with " << WEXITSTATUS(wstatus);
    while (read(fds[0], &a, sizeof a) == static_cast<ssize_t>(sizeof a)) {
      if (a.op == 'P' && a.index % 5 != 2) must_exist.insert(a.index);  // never a remove target
      if (a.op == 'R') must_not_exist.insert(a.index);
    }
    ::close(fds[0]);

    auto report = verify_store_dir(dir->path());
    ASSERT_TRUE(report.is_ok()) << report.status().to_string();
    ASSERT_EQ(report->corrupt, 0u)
        << "iteration " << iter << ": " << (report->problems.empty() ? "" : report->problems[0]);
    killed_with_torn += report->torn > 0;
    StoreHarness h;
    ASSERT_TRUE(h.start(crash_options(dir->path())).is_ok());
    ASSERT_EQ(h.store->stats().corrupt_records, 0u);
    for (const ObjectInfo& info : h.store->list()) {
      uint64_t i = info.key.hash;
      ASSERT_EQ(info.payload_bytes, object_bytes(i)) << "iteration " << iter << " key " << i;
      ASSERT_TRUE(h.check_seeded(i, object_bytes(i))) << "iteration " << iter;
      ++objects_checked;
    }
    for (uint64_t i : must_exist) ASSERT_TRUE(h.store->contains(test_key(i))) << "lost put " << i;
    for (uint64_t i : must_not_exist) {
      ASSERT_FALSE(h.store->contains(test_key(i))) << "remove of " << i << " undone";
    }
  }
  std::printf("crash test: %llu iterations, %llu objects checked, %llu with torn records\n",
              static_cast<unsigned long long>(iterations),
              static_cast<unsigned long long>(objects_checked),
              static_cast<unsigned long long>(killed_with_torn));
}

}  // namespace
}  // namespace tempokv::testing
