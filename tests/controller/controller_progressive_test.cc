// Progressive release: each object's protection ends when its own copy to the device is done.
#include <gtest/gtest.h>

#include "controller_fixture.h"

namespace tempokv {
namespace {

using std::chrono::milliseconds;
using testing::Fixture;
using testing::manifest;
using testing::obj;

// Immediate commit of two 64 MiB objects (ready at 125 ms), transfer from 500 to 600 ms with the
// first object's copy done at 550 ms. Returns C.
double run(bool progressive) {
  ControllerOptions co;
  co.progressive_release = progressive;
  Fixture f("immediate", {}, co);
  EXPECT_TRUE(f.controller->report(1, manifest({1, 2}), milliseconds(500)).is_ok());
  f.run_to(milliseconds(500));
  EXPECT_EQ(*f.controller->request_retrieval(1, nullptr), RetrievalAnswer::kReady);
  EXPECT_TRUE(f.controller->begin_transfer(1).is_ok());
  f.run_to(milliseconds(550));
  EXPECT_TRUE(f.controller->object_transferred(1, obj(1)).is_ok());
  EXPECT_EQ(f.stack.tier->stats().protected_bytes, progressive ? testing::kObj : 2 * testing::kObj);
  EXPECT_TRUE(f.stack.tier->resident(obj(1)));  // still cached, only unprotected
  f.run_to(milliseconds(600));
  EXPECT_TRUE(f.controller->object_transferred(1, obj(2)).is_ok());
  EXPECT_TRUE(f.controller->end_transfer(1).is_ok());
  EXPECT_EQ(f.stack.tier->stats().protected_bytes, 0u);
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
  return f.controller->stats().protected_gib_s;
}

TEST(ProgressiveRelease, EndsEachObjectsProtectionAfterItsCopy) {
  EXPECT_DOUBLE_EQ(run(false), 0.125 * 0.6);
  EXPECT_DOUBLE_EQ(run(true), 0.125 * 0.55 + 0.0625 * 0.05);
}

TEST(ProgressiveRelease, KeepsAnotherClaimsProtectionOfASharedObject) {
  ControllerOptions co;
  co.progressive_release = true;
  Fixture f("immediate", {}, co);
  ASSERT_TRUE(f.controller->report(1, manifest({1, 2}), milliseconds(500)).is_ok());
  ASSERT_TRUE(f.controller->report(2, manifest({1}), milliseconds(900)).is_ok());
  f.run_to(milliseconds(500));
  ASSERT_EQ(*f.controller->request_retrieval(1, nullptr), RetrievalAnswer::kReady);
  ASSERT_TRUE(f.controller->begin_transfer(1).is_ok());
  ASSERT_TRUE(f.controller->object_transferred(1, obj(1)).is_ok());
  EXPECT_EQ(f.stack.tier->find(obj(1))->protect_count, 1u);  // claim 2 still protects it
  EXPECT_EQ(f.controller->object_transferred(1, obj(1)).code(), StatusCode::kNotFound);
  EXPECT_EQ(f.controller->object_transferred(2, obj(1)).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(f.controller->end_transfer(1).is_ok());
  EXPECT_TRUE(f.stack.provider->check_invariants().is_ok());
}

}  // namespace
}  // namespace tempokv
