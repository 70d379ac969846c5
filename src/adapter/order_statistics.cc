#include "adapter/order_statistics.h"

#include <algorithm>

namespace tempokv {

std::vector<double> expected_order_statistics(std::vector<TaggedAtom>& atoms, uint32_t variables,
                                              uint32_t m) {
  m = std::min(m, variables);
  std::vector<double> expected(m, 0.0);
  if (m == 0) return expected;
  std::sort(atoms.begin(), atoms.end(),
            [](const TaggedAtom& a, const TaggedAtom& b) { return a.value < b.value; });
  std::vector<double> survival(variables, 1.0);  // P(X_i > x) on the current segment
  std::vector<double> done(m);                   // P(exactly c variables <= x), c < m
  double x = 0;
  for (const TaggedAtom& a : atoms) {
    if (a.value > x) {
      // On [x, a.value) the survivals are constant: P(X_(j) > x) = P(fewer than j done).
      std::fill(done.begin(), done.end(), 0.0);
      done[0] = 1;
      for (uint32_t i = 0; i < variables; ++i) {
        const double s = survival[i], d = 1 - s;
        for (uint32_t c = std::min(i + 1, m - 1); c > 0; --c) {
          done[c] = done[c] * s + done[c - 1] * d;
        }
        done[0] *= s;
      }
      double fewer = 0;  // P(fewer than j done), j = 1..m
      for (uint32_t j = 0; j < m; ++j) {
        fewer += done[j];
        expected[j] += (a.value - x) * fewer;
      }
      if (fewer <= 0) break;  // m variables are done for sure: nothing more to add
      x = a.value;
    }
    survival[a.variable] = std::max(0.0, survival[a.variable] - a.weight);
  }
  return expected;
}

}  // namespace tempokv
