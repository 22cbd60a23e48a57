#include "gate/mann_whitney.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

namespace attnprof::gate {

namespace {

double normal_upper_tail(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

// P(U_x = u) for u = 0 .. m*n under H0 with no ties, by conditioning on which sample holds the largest
// value: with probability m/(m+n) it is an x and beats all n values of y (U = n + U(m-1, n)), otherwise
// it is a y and beats nothing of x (U = U(m, n-1)). Only additions of non-negative terms, so the tails
// keep full relative precision (a product formula with cancellations would not).
std::vector<double> exact_u_distribution(int64_t m, int64_t n) {
  // prev[j] = distribution for (i - 1, j); cur[j] = for (i, j); each is a vector over u.
  std::vector<std::vector<double>> prev(n + 1), cur(n + 1);
  for (int64_t j = 0; j <= n; ++j) prev[j] = {1.0};  // i = 0: U = 0 surely
  for (int64_t i = 1; i <= m; ++i) {
    cur[0] = {1.0};  // j = 0: U = 0 surely
    for (int64_t j = 1; j <= n; ++j) {
      std::vector<double> d(static_cast<size_t>(i * j + 1), 0.0);
      const double p_x_largest = static_cast<double>(i) / static_cast<double>(i + j);
      for (size_t u = 0; u < prev[j].size(); ++u) d[u + static_cast<size_t>(j)] += p_x_largest * prev[j][u];
      for (size_t u = 0; u < cur[j - 1].size(); ++u) d[u] += (1.0 - p_x_largest) * cur[j - 1][u];
      cur[j] = std::move(d);
    }
    std::swap(prev, cur);
  }
  return prev[n];
}

}  // namespace

double mann_whitney_min_p(int64_t n_x, int64_t n_y) {
  if (n_x <= 0 || n_y <= 0) return 1.0;
  // 1 / C(n_x + n_y, n_x) through lgamma: exact enough and safe from overflow.
  const double log_c = std::lgamma(static_cast<double>(n_x + n_y + 1)) -
                       std::lgamma(static_cast<double>(n_x + 1)) - std::lgamma(static_cast<double>(n_y + 1));
  return std::exp(-log_c);
}

MannWhitney mann_whitney_u(std::span<const double> x, std::span<const double> y) {
  MannWhitney r;
  const auto m = static_cast<int64_t>(x.size());
  const auto n = static_cast<int64_t>(y.size());
  if (m == 0 || n == 0) return r;

  // Midranks of the pooled sample; ties share the mean of the ranks they span.
  std::vector<std::pair<double, bool>> pooled;  // (value, is_x)
  pooled.reserve(static_cast<size_t>(m + n));
  for (double v : x) pooled.emplace_back(v, true);
  for (double v : y) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto total = static_cast<int64_t>(pooled.size());
  double rank_sum_x = 0;
  double tie_term = 0;  // sum over tie groups of t^3 - t
  bool ties = false;
  for (int64_t i = 0; i < total;) {
    int64_t j = i;
    while (j + 1 < total && pooled[j + 1].first == pooled[i].first) ++j;
    const double t = static_cast<double>(j - i + 1);
    const double mid_rank = 0.5 * static_cast<double>(i + j) + 1.0;
    for (int64_t k = i; k <= j; ++k)
      if (pooled[k].second) rank_sum_x += mid_rank;
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j + 1;
  }
  r.u_x = rank_sum_x - static_cast<double>(m) * static_cast<double>(m + 1) / 2.0;

  if (!ties && m <= kMannWhitneyExactMaxN && n <= kMannWhitneyExactMaxN) {
    const std::vector<double> dist = exact_u_distribution(m, n);
    const auto u = static_cast<size_t>(std::llround(r.u_x));
    const double at_most = std::accumulate(dist.begin(), dist.begin() + static_cast<long>(u) + 1, 0.0);
    const double at_least = std::accumulate(dist.begin() + static_cast<long>(u), dist.end(), 0.0);
    r.p_greater = std::min(1.0, at_least);
    r.p_less = std::min(1.0, at_most);
    r.exact = true;
    return r;
  }

  const double dm = static_cast<double>(m), dn = static_cast<double>(n), dt = static_cast<double>(total);
  const double mean_u = dm * dn / 2.0;
  const double var_u = dm * dn / 12.0 * ((dt + 1.0) - tie_term / (dt * (dt - 1.0)));
  if (var_u <= 0) return r;  // every value equal: no evidence either way, p = 1
  const double sd_u = std::sqrt(var_u);
  r.z = (r.u_x - mean_u) / sd_u;
  // Continuity correction: U moves in steps of 1/2 or 1; shift by 1/2 towards the mean.
  r.p_greater = std::min(1.0, normal_upper_tail((r.u_x - mean_u - 0.5) / sd_u));
  r.p_less = std::min(1.0, normal_upper_tail(-(r.u_x - mean_u + 0.5) / sd_u));
  return r;
}

}  // namespace attnprof::gate
