#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gate/compare.hpp"
#include "gate/mann_whitney.hpp"
#include "gate_fixtures.hpp"

using namespace attnprof;
using gate::mann_whitney_u;

TEST_CASE("Mann-Whitney exact p-values match hand enumeration") {
  // Complete separation, 3 vs 3: exactly 1 of the C(6,3) = 20 equally likely splits is this extreme.
  const std::vector<double> low{1, 2, 3}, high{4, 5, 6};
  auto r = mann_whitney_u(high, low);
  CHECK(r.exact);
  CHECK(r.u_x == 9);
  CHECK(r.p_greater == Approx(0.05).epsilon(1e-12));
  CHECK(r.p_less == Approx(1.0));
  r = mann_whitney_u(low, high);
  CHECK(r.u_x == 0);
  CHECK(r.p_less == Approx(0.05).epsilon(1e-12));

  // x = {1,3,5}, y = {2,4}: U_x = 3. The U distribution for sizes 3 and 2 has counts
  // 1,1,2,2,2,1,1 over u = 0..6 (Gaussian binomial [5 over 2]), so P(U >= 3) = P(U <= 3) = 6/10.
  r = mann_whitney_u(std::vector<double>{1, 3, 5}, std::vector<double>{2, 4});
  CHECK(r.u_x == 3);
  CHECK(r.p_greater == Approx(0.6).epsilon(1e-12));
  CHECK(r.p_less == Approx(0.6).epsilon(1e-12));

  // 6 vs 7 values, enumerated over all C(13,6) = 1716 splits: 382 have U >= 27, 1402 have U <= 27.
  r = mann_whitney_u(std::vector<double>{1.5, 2.5, 3.1, 7, 8.2, 9.9},
                     std::vector<double>{1, 2, 3, 4, 5, 6, 6.5});
  CHECK(r.u_x == 27);
  CHECK(r.p_greater == Approx(382.0 / 1716.0).epsilon(1e-12));
  CHECK(r.p_less == Approx(1402.0 / 1716.0).epsilon(1e-12));
}

TEST_CASE("Mann-Whitney normal approximation with ties and continuity correction") {
  // 25 vs 25 with heavy ties: U_x = 500 (by pair counting), tie-corrected variance
  // 25*25/12 * (51 - sum(t^3 - t) / (50*49)) = 2391.5816...; with the continuity correction
  // p_greater = Q((500 - 312.5 - 0.5) / sqrt(var)) = 6.5696e-05 and p_less = 0.99993955.
  std::vector<double> x, y;
  for (int i = 0; i < 5; ++i) x.push_back(10), y.push_back(9);
  for (int i = 0; i < 10; ++i) x.push_back(11), y.push_back(10);
  for (int i = 0; i < 10; ++i) x.push_back(12), y.push_back(11);
  const auto r = mann_whitney_u(x, y);
  CHECK_FALSE(r.exact);
  CHECK(r.u_x == 500);
  CHECK(r.z == Approx((500 - 312.5) / std::sqrt(2391.581632653061)).epsilon(1e-9));
  CHECK(r.p_greater == Approx(6.569626446423209e-05).epsilon(1e-6));
  CHECK(r.p_less == Approx(0.9999395470592514).epsilon(1e-9));
}

TEST_CASE("Mann-Whitney degenerate inputs give no evidence") {
  const std::vector<double> same(30, 5.0);
  auto r = mann_whitney_u(same, same);
  CHECK(r.p_greater == 1.0);
  CHECK(r.p_less == 1.0);
  r = mann_whitney_u(std::vector<double>{}, same);
  CHECK(r.p_greater == 1.0);
  CHECK(gate::mann_whitney_min_p(3, 3) == Approx(1.0 / 20));
  CHECK(gate::mann_whitney_min_p(5, 5) == Approx(1.0 / 252));
  CHECK(gate::mann_whitney_min_p(0, 5) == 1.0);
}

TEST_CASE("Mann-Whitney normal approximation agrees with a permutation test at n = 30") {
  std::mt19937_64 rng(7);
  const auto y = test::latency_samples(rng, 30, 100.0, 0.02);
  const auto x = test::latency_samples(rng, 30, 101.0, 0.02);
  const auto r = mann_whitney_u(x, y);
  // Permutation distribution of U_x under H0, by shuffling the pooled sample.
  std::vector<double> pooled(x);
  pooled.insert(pooled.end(), y.begin(), y.end());
  const int kShuffles = 20000;
  int at_least = 0;
  for (int i = 0; i < kShuffles; ++i) {
    std::shuffle(pooled.begin(), pooled.end(), rng);
    const std::vector<double> px(pooled.begin(), pooled.begin() + 30), py(pooled.begin() + 30, pooled.end());
    if (mann_whitney_u(px, py).u_x >= r.u_x) ++at_least;
  }
  const double p_perm = static_cast<double>(at_least) / kShuffles;
  INFO("normal approximation " << r.p_greater << ", permutation " << p_perm);
  // The permutation estimate has a standard error of at most 0.0036 at 20000 shuffles.
  CHECK(std::abs(r.p_greater - p_perm) < 0.012);
  CHECK(r.p_greater > 0.001);  // a 1% shift at 2% noise is not overwhelming: the check is not vacuous
  CHECK(r.p_greater < 0.5);
}

TEST_CASE("exact and approximate Mann-Whitney agree at the switch-over size") {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  std::vector<double> x, y;
  for (int i = 0; i < 20; ++i) x.push_back(normal(rng) + 0.7), y.push_back(normal(rng));
  const auto exact = mann_whitney_u(x, y);
  REQUIRE(exact.exact);
  x.push_back(normal(rng) + 0.7);  // 21 values: approximation
  const auto approx = mann_whitney_u(x, y);
  REQUIRE_FALSE(approx.exact);
  CHECK(exact.p_greater < 0.05);
  CHECK(approx.p_greater == Approx(exact.p_greater).margin(0.02));
}

TEST_CASE("bootstrap interval of the median ratio: seeded, covers the truth, degenerate when equal") {
  std::mt19937_64 rng(3);
  const auto b = test::latency_samples(rng, 30, 100.0, 0.02);
  const auto c = test::latency_samples(rng, 30, 110.0, 0.02);
  const auto ci = gate::bootstrap_ratio_ci(b, c, 0.95, 2000, 42);
  const auto again = gate::bootstrap_ratio_ci(b, c, 0.95, 2000, 42);
  CHECK(ci.low == again.low);
  CHECK(ci.high == again.high);
  CHECK(ci.low < 1.10);
  CHECK(ci.high > 1.10);
  CHECK(ci.low > 1.05);  // 2% noise, 30 samples: the interval is a few percent wide, not wider
  CHECK(ci.high < 1.15);
  const std::vector<double> flat(20, 50.0);
  const auto one = gate::bootstrap_ratio_ci(flat, flat, 0.95, 500, 1);
  CHECK(one.low == 1.0);
  CHECK(one.high == 1.0);
}
