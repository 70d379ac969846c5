// Expected order statistics of independent discrete variables: E[X_(1)] <= ... <= E[X_(m)], where
// X_(j) is the j-th smallest of X_1..X_B. The TTU projection uses them for the running requests'
// remaining outputs: a slot frees at the first of several completions, whose expectation
// E[min_i R_i] lies below min_i E[R_i] when the outputs vary (DESIGN.md §4, AdapterOptions::
// wait_order_statistics).
//
// Method: E[X_(j)] = ∫_0^∞ P(X_(j) > x) dx, and X_(j) > x iff fewer than j of the variables are
// <= x. Sweeping x over the atoms in ascending order, each variable's survival S_i(x) is constant
// between two atoms, and P(fewer than j done) comes from the Poisson-binomial distribution of the
// count done (a product of the survivals for j = 1), truncated at m. Cost O(A log A + A·B·m) for
// A atoms in all; the sum of all B order statistics equals the sum of the means (exactly, up to
// rounding). Stateless, thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace tempokv {

// One value variable `variable` (0..B−1) takes with probability `weight`; a variable's weights sum
// to 1. Values are >= 0.
struct TaggedAtom {
  double value;
  double weight;
  uint32_t variable;
};

// E[X_(1)], ..., E[X_(m)] of the `variables` variables the atoms describe (m <= variables).
// Sorts `atoms` in place.
std::vector<double> expected_order_statistics(std::vector<TaggedAtom>& atoms, uint32_t variables,
                                              uint32_t m);

}  // namespace tempokv
