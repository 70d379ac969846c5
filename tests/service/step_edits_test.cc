// A step's lists as edits of the last step's (protocol v4): what make_step_edits writes,
// apply_step_edits reads back to the very lists, over random engine-like and arbitrary changes;
// the edits the daemon must refuse are refused, naming what was wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "tempokv/protocol.h"

namespace tempokv::service {
namespace {

// The next lists of an engine: some decoders finish (and, rarely, one is preempted back to the
// queue's head), the queue's head is admitted, new requests join its tail; or, at random, a
// reordered queue and shuffled decoders that edits cannot say.
StepLists next_lists(const StepLists& last, uint64_t& next_id, std::mt19937_64& rng) {
  StepLists n;
  std::bernoulli_distribution finish(0.02), preempt(0.01), shuffle(0.05);
  std::vector<uint64_t> preempted;
  for (uint64_t id : last.decoders) {
    if (finish(rng)) continue;
    if (preempt(rng)) {
      preempted.push_back(id);
      continue;
    }
    n.decoders.push_back(id);
  }
  const size_t admit = std::min<size_t>(last.waiting.size(), rng() % 5);
  n.decoders.insert(n.decoders.end(), last.waiting.begin(), last.waiting.begin() + admit);
  n.waiting = preempted;
  n.waiting.insert(n.waiting.end(), last.waiting.begin() + admit, last.waiting.end());
  for (uint64_t k = rng() % 5; k > 0; --k) n.waiting.push_back(next_id++);
  if (shuffle(rng)) std::shuffle(n.waiting.begin(), n.waiting.end(), rng);
  if (shuffle(rng)) std::shuffle(n.decoders.begin(), n.decoders.end(), rng);
  return n;
}

TEST(StepEdits, WhatTheClientWritesTheDaemonReadsBackToTheSameLists) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    uint64_t next_id = 1;
    StepLists client, daemon;
    for (; next_id <= 256; ++next_id) client.decoders.push_back(next_id);
    for (; next_id <= 1256; ++next_id) client.waiting.push_back(next_id);
    daemon = client;
    size_t as_edits = 0, full = 0;
    for (uint64_t seq = 2; seq < 400; ++seq) {
      StepLists now = next_lists(client, next_id, rng);
      Step step{.decoders = now.decoders, .waiting = now.waiting};
      if (make_step_edits(step, client, seq - 1)) {
        ++as_edits;
        ASSERT_EQ(step.base, seq - 1);
        EXPECT_TRUE(step.decoders.empty() && step.waiting.empty());
        EXPECT_LT(step.decoders_gone.size() + step.decoders_new.size() + step.waiting_new.size(),
                  now.decoders.size() + now.waiting.size());
        Status st = apply_step_edits(step, daemon, kMaxIdList);
        ASSERT_TRUE(st.is_ok()) << st.to_string();
      } else {
        ++full;
        ASSERT_FALSE(step.base);
        EXPECT_EQ(step.decoders, now.decoders);
        daemon = StepLists{step.decoders, step.waiting};
      }
      ASSERT_EQ(daemon.decoders, now.decoders) << "seed " << seed << " step " << seq;
      ASSERT_EQ(daemon.waiting, now.waiting) << "seed " << seed << " step " << seq;
      client = now;
    }
    // Most steps of an engine are edits; the shuffled ones (about one in ten) go in full.
    EXPECT_GT(as_edits, 300u) << "seed " << seed;
    EXPECT_GT(full, 10u) << "seed " << seed;
  }
}

TEST(StepEdits, ADecoderListedTwiceThatStaysIsNotSaidAsEdits) {
  // Removing 7 removes every 7: the list 7, 8 cannot come from 7, 8, 7 by removals.
  const StepLists last{{7, 8, 7}, {}};
  Step step{.decoders = {7, 8}, .waiting = {1, 2, 3}};
  EXPECT_FALSE(make_step_edits(step, last, 1));
  EXPECT_EQ(step.decoders, (std::vector<uint64_t>{7, 8}));
}

TEST(StepEdits, EditsNoShorterThanTheListsAreNotUsed) {
  const StepLists last{{1, 2}, {3}};
  Step step{.decoders = {4, 5}, .waiting = {6}};  // everything changed
  EXPECT_FALSE(make_step_edits(step, last, 1));
  Step again{.decoders = {1, 2}, .waiting = {3}};  // nothing changed: no ids at all
  ASSERT_TRUE(make_step_edits(again, last, 1));
  EXPECT_TRUE(again.decoders_gone.empty() && again.decoders_new.empty() &&
              again.waiting_new.empty());
  EXPECT_EQ(again.waiting_taken, 0u);
}

TEST(StepEdits, TheDaemonRefusesEditsThatDoNotFitTheLastLists) {
  StepLists lists{{1, 2, 3}, {4, 5}};
  Step gone{.base = 9, .decoders_gone = {2, 77}};
  Status st = apply_step_edits(gone, lists, kMaxIdList);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("decoders_gone lists request 77, not a decoder of step 9"),
            std::string::npos)
      << st.to_string();
  lists = {{1, 2, 3}, {4, 5}};
  Step taken{.base = 9, .waiting_taken = 3};
  st = apply_step_edits(taken, lists, kMaxIdList);
  EXPECT_NE(st.message().find("waiting_taken is 3, but step 9's order has 2 requests"),
            std::string::npos)
      << st.to_string();
  // Lists that would outgrow the limit: edits append a bounded number of ids per step, the
  // lists they make are bounded too.
  lists = {{1, 2, 3}, {4, 5}};
  Step grows{.base = 9, .waiting_new = {6, 7}};
  st = apply_step_edits(grows, lists, 3);
  EXPECT_NE(st.message().find("the waiting order would be 4 requests, more than the limit of 3"),
            std::string::npos)
      << st.to_string();
  lists = {{1, 2, 3}, {4, 5}};
  Step more{.base = 9, .decoders_new = {6}};
  st = apply_step_edits(more, lists, 3);
  EXPECT_NE(st.message().find("the decoders would be 4 requests"), std::string::npos)
      << st.to_string();
}

}  // namespace
}  // namespace tempokv::service
