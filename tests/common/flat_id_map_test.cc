#include "common/flat_id_map.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace tempokv {
namespace {

TEST(FlatIdMap, InsertsFindsAndErases) {
  FlatIdMap<int> m;
  EXPECT_EQ(m.find(7), nullptr);
  m[7] = 70;
  m[8] = 80;
  ASSERT_NE(m.find(7), nullptr);
  EXPECT_EQ(*m.find(7), 70);
  EXPECT_EQ(m.size(), 2u);
  EXPECT_TRUE(m.erase(7));
  EXPECT_FALSE(m.erase(7));
  EXPECT_FALSE(m.contains(7));
  EXPECT_EQ(*m.find(8), 80);  // moved into the erased place, still found
  EXPECT_EQ(m[9], 0);         // inserted default-constructed
}

// Random inserts and erases over a small id range (long probe runs, wrap-around, growth) agree
// with std::unordered_map after every operation.
TEST(FlatIdMap, AgreesWithAnUnorderedMapUnderRandomInsertsAndErases) {
  std::mt19937_64 rng(11);
  for (uint64_t range : {40ull, 3000ull, 1ull << 40}) {
    FlatIdMap<uint64_t> m;
    std::unordered_map<uint64_t, uint64_t> ref;
    for (int op = 0; op < 20000; ++op) {
      // Salted ids as the service makes them, or small sequential ones.
      const uint64_t id = (rng() % range) ^ (range > 5000 ? 0x5bd1e995ull << 20 : 0);
      if (rng() % 3 == 0) {
        ASSERT_EQ(m.erase(id), ref.erase(id) == 1);
      } else {
        const uint64_t v = rng();
        m[id] = v;
        ref[id] = v;
      }
      ASSERT_EQ(m.size(), ref.size());
      if (op % 97 == 0) {
        for (const auto& [k, v] : ref) {
          const uint64_t* got = m.find(k);
          ASSERT_NE(got, nullptr) << k;
          ASSERT_EQ(*got, v);
        }
        for (int probe = 0; probe < 50; ++probe) {
          const uint64_t k = rng() % range;
          ASSERT_EQ(m.contains(k), ref.count(k) == 1) << k;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tempokv
