#include "gate/bootstrap.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace attnprof::gate {

namespace {

// mt19937_64 yields 64 random bits; a double holds 53 of them.
constexpr int kMantissaBits = 53;
constexpr int kDiscardedBits = 64 - kMantissaBits;
const double kUnitStep = std::ldexp(1.0, -kMantissaBits);

// The rank (0-based) among n values of the value at uniform position u in (0, 1): a draw with
// replacement picks rank floor(n u), the same map for every draw, so order statistics map to order
// statistics.
size_t rank_at(double u, size_t n) {
  return std::min(n - 1, static_cast<size_t>(u * static_cast<double>(n)));
}

}  // namespace

double BootstrapRng::uniform() {
  // The midpoint of one of 2^53 equal cells: never 0, so logs of it are finite.
  return (static_cast<double>(engine_() >> kDiscardedBits) + 0.5) * kUnitStep;
}

double BootstrapRng::normal() {
  return std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * std::numbers::pi * uniform());
}

double BootstrapRng::gamma(double shape) {
  // Marsaglia & Tsang, "A simple method for generating gamma variables" (ACM TOMS 26(3), 2000):
  // a cubed normal, accepted with probability over 95% for every shape >= 1.
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = normal();
    double v = 1.0 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    if (std::log(uniform()) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

double resampled_median(std::span<const double> sorted, BootstrapRng& rng) {
  // The k-th smallest of n uniforms is S_k / S_(n+1), S_j being a sum of j unit exponentials
  // (Devroye, "Non-Uniform Random Variate Generation", 1986, V.2): S_k ~ Gamma(k), and the rest of
  // S_(n+1) is an independent Gamma(n + 1 - k).
  const size_t n = sorted.size();
  if (n % 2 == 1) {
    const size_t k = (n + 1) / 2;  // the median is the k-th smallest
    const double below = rng.gamma(static_cast<double>(k));
    const double above = rng.gamma(static_cast<double>(n + 1 - k));
    return sorted[rank_at(below / (below + above), n)];
  }
  // Even n: type 7 averages the (n/2)-th and (n/2 + 1)-th smallest, one unit exponential apart in S.
  const size_t k = n / 2;
  const double below = rng.gamma(static_cast<double>(k));
  const double gap = -std::log(rng.uniform());
  const double above = rng.gamma(static_cast<double>(n - k));
  const double total = below + gap + above;
  const double lower = sorted[rank_at(below / total, n)];
  const double upper = sorted[rank_at((below + gap) / total, n)];
  return lower + 0.5 * (upper - lower);
}

}  // namespace attnprof::gate
