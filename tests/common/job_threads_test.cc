#include "common/job_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace tempokv {
namespace {

TEST(JobThreads, OneThreadRunsJobsInTheOrderGivenOffTheCallersThread) {
  std::vector<int> order;
  std::set<std::thread::id> ran_on;
  {
    JobThreads one(1);
    for (int i = 0; i < 50; ++i) {
      one.run([&, i] {  // one thread: the jobs never overlap
        order.push_back(i);
        ran_on.insert(std::this_thread::get_id());
      });
    }
  }  // the destructor runs every job given, then joins
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
  ASSERT_EQ(ran_on.size(), 1u);
  EXPECT_NE(*ran_on.begin(), std::this_thread::get_id());
}

TEST(JobThreads, ZeroThreadsRunEachJobInlineOnTheCaller) {
  JobThreads none(0);
  std::thread::id ran_on;
  none.run([&] { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(JobThreads, SeveralThreadsRunJobsAtOnce) {
  // Two jobs that each wait for the other to have started finish only if they run at once.
  std::atomic<int> started{0};
  std::atomic<int> met{0};
  {
    JobThreads two(2);
    for (int i = 0; i < 2; ++i) {
      two.run([&] {
        ++started;
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (started.load() < 2 && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::yield();
        }
        if (started.load() == 2) ++met;
      });
    }
  }
  EXPECT_EQ(met.load(), 2);
}

TEST(JobThreads, AJobsCapturesAreReleasedWithoutTheLockSoTheirReleaseMayQueueAJob) {
  // tempokvd's write region is deleted by a job its last owner queues; when that owner is a job's
  // closure, the closure's release runs run() on the job thread. Held under the pool's lock, it
  // would deadlock that thread (and every job after it).
  auto* jobs = new JobThreads(1);  // leaked if the thread deadlocks: it could not be joined
  std::promise<void> queued_job_ran;
  auto owner = std::shared_ptr<int>(new int(0), [&, jobs](int* p) {
    delete p;
    jobs->run([&] { queued_job_ran.set_value(); });
  });
  jobs->run([owner = std::move(owner)] {});  // the closure is the last owner
  const bool ran = queued_job_ran.get_future().wait_for(std::chrono::seconds(10)) ==
                   std::future_status::ready;
  ASSERT_TRUE(ran) << "the job queued by a capture's release never ran";
  delete jobs;
}

}  // namespace
}  // namespace tempokv
