#include "adapter/order_statistics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

namespace tempokv {
namespace {

// Each variable's values, equally likely.
std::vector<double> statistics(const std::vector<std::vector<double>>& values, uint32_t m) {
  std::vector<TaggedAtom> atoms;
  for (uint32_t i = 0; i < values.size(); ++i) {
    for (double v : values[i]) atoms.push_back({v, 1.0 / double(values[i].size()), i});
  }
  return expected_order_statistics(atoms, static_cast<uint32_t>(values.size()), m);
}

// X1 is 1 or 3, X2 is 2: the first completion is 1 or 2 (1.5), the last 2 or 3 (2.5), though
// both means are 2.
TEST(OrderStatistics, TheFirstOfTwoComesBeforeTheFirstOfTheirMeans) {
  const std::vector<double> e = statistics({{1, 3}, {2}}, 2);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_DOUBLE_EQ(e[0], 1.5);
  EXPECT_DOUBLE_EQ(e[1], 2.5);
}

// X1 in {1, 5}, X2 in {2, 6}, X3 = 4 (means 3, 4, 4): P(min > x) is 1, 1/2, 1/4 on [0, 1), [1, 2),
// [2, 4), so E[min] = 1 + 1/2 + 2/4 = 2; the second is 1 + 1 + 2 · 3/4 + 1/4 = 3.75; the last
// 4 + 3/4 + 1/2 = 5.25, and the three sum to the means' 11.
TEST(OrderStatistics, ThreeKnownWindowsGiveTheirExactOrderStatistics) {
  const std::vector<double> e = statistics({{1, 5}, {2, 6}, {4}}, 3);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_DOUBLE_EQ(e[0], 2.0);
  EXPECT_DOUBLE_EQ(e[1], 3.75);
  EXPECT_DOUBLE_EQ(e[2], 5.25);
  const std::vector<double> first = statistics({{1, 5}, {2, 6}, {4}}, 1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_DOUBLE_EQ(first[0], 2.0);
}

TEST(OrderStatistics, FixedValuesAreTheirOwnOrderStatistics) {
  const std::vector<double> e = statistics({{7}, {3}, {5}}, 3);
  EXPECT_EQ(e, (std::vector<double>{3, 5, 7}));
}

// Against every joint outcome, with unequal weights and ties.
TEST(OrderStatistics, EqualTheMeanOverAllJointOutcomes) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 200; ++round) {
    const uint32_t n = 1 + static_cast<uint32_t>(rng() % 4);
    std::vector<std::vector<std::pair<double, double>>> vars(n);  // (value, weight)
    std::vector<TaggedAtom> atoms;
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t k = 1 + static_cast<uint32_t>(rng() % 4);
      double total = 0;
      for (uint32_t a = 0; a < k; ++a) {
        vars[i].push_back({double(rng() % 10), double(1 + rng() % 5)});
        total += vars[i].back().second;
      }
      for (auto& [v, w] : vars[i]) {
        w /= total;
        atoms.push_back({v, w, i});
      }
    }
    std::vector<double> want(n, 0.0);
    std::vector<double> outcome(n);
    std::function<void(uint32_t, double)> walk = [&](uint32_t i, double p) {
      if (i == n) {
        std::vector<double> sorted = outcome;
        std::sort(sorted.begin(), sorted.end());
        for (uint32_t j = 0; j < n; ++j) want[j] += p * sorted[j];
        return;
      }
      for (auto [v, w] : vars[i]) {
        outcome[i] = v;
        walk(i + 1, p * w);
      }
    };
    walk(0, 1.0);
    const std::vector<double> got = expected_order_statistics(atoms, n, n);
    for (uint32_t j = 0; j < n; ++j) ASSERT_NEAR(got[j], want[j], 1e-9) << round << " " << j;
  }
}

}  // namespace
}  // namespace tempokv
