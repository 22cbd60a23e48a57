// The Mann-Whitney U test (Wilcoxon rank-sum): does one sample tend to take larger values than the
// other? Distribution-free, so it suits latency samples (right-skewed, outliers, quantised timers)
// where a t-test's normality assumption does not hold. docs/ci-gate.md explains how the gate uses it.
#pragma once
#include <cstdint>
#include <span>

namespace attnprof::gate {

struct MannWhitney {
  double u_x = 0;           // pairs (x_i, y_j) with x_i > y_j, ties counted 1/2
  double z = 0;             // standardised U_x (tie-corrected, no continuity correction); 0 when exact
  double p_greater = 1;     // one-sided p-value, H1: x tends to be larger than y
  double p_less = 1;        // one-sided p-value, H1: x tends to be smaller than y
  bool exact = false;       // true: from the exact null distribution of U; false: normal approximation
};

// Samples with no ties and at most kExactMaxN values each get the exact distribution (the normal
// approximation is poor there); otherwise the normal approximation with tie correction and a
// continuity correction of 1/2. Empty input gives p = 1 both ways.
inline constexpr int64_t kMannWhitneyExactMaxN = 20;
MannWhitney mann_whitney_u(std::span<const double> x, std::span<const double> y);

// The smallest one-sided p-value any outcome can reach with these sample sizes, 1 / C(n_x + n_y, n_x):
// when it is not below alpha, no amount of slowdown can be called significant.
double mann_whitney_min_p(int64_t n_x, int64_t n_y);

}  // namespace attnprof::gate
