#include "core/work_split.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <vector>

#include "core/tiles/fused_tiles.hpp"
#include "core/tiles/fused_sm90_tiles.hpp"

namespace attnprof::core {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// The top-level template arguments after `name<`, or empty when the name is not there.
std::vector<std::string_view> template_args(std::string_view kernel_name, std::string_view name) {
  const size_t at = kernel_name.find(std::string(name) + "<");
  if (at == std::string_view::npos) return {};
  std::vector<std::string_view> args;
  size_t start = at + name.size() + 1;
  int depth = 0;
  for (size_t i = start; i < kernel_name.size(); ++i) {
    const char c = kernel_name[i];
    if (c == '<' || c == '(') ++depth;
    if (c == ')') --depth;
    if (c == '>' && depth == 0) {
      args.push_back(trim(kernel_name.substr(start, i - start)));
      return args;
    }
    if (c == '>') --depth;
    if (c == ',' && depth == 0) {
      args.push_back(trim(kernel_name.substr(start, i - start)));
      start = i + 1;
    }
  }
  return {};  // unterminated
}

std::optional<int64_t> integer(std::string_view s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// "d128" (short name) or "128" (demangled).
std::optional<int64_t> hdim_arg(std::string_view s) {
  if (!s.empty() && s.front() == 'd') s.remove_prefix(1);
  return integer(s);
}

// "small" (short name) or "(attnprof::kernels::fused::TileVariant)1" (demangled: the enum's value).
template <class Enum>
std::optional<Enum> enum_arg(std::string_view s, std::optional<Enum> (*parse)(std::string_view), int count) {
  if (!s.empty() && s.front() == '(') {
    const size_t close = s.find(')');
    if (close == std::string_view::npos) return std::nullopt;
    const auto v = integer(s.substr(close + 1));
    if (!v || *v < 0 || *v >= count) return std::nullopt;
    return static_cast<Enum>(*v);
  }
  return parse(s);
}

std::optional<kernels::fused::TileVariant> parse_fused_variant(std::string_view s) {
  if (s.empty()) return std::nullopt;  // parse_variant reads "" as the default; a name always spells it
  return kernels::fused::parse_variant(s);
}
std::optional<kernels::fused_sm90::Schedule> parse_sm90_schedule(std::string_view s) {
  const auto choice = kernels::fused_sm90::parse_schedule(s);
  return choice.valid ? choice.fixed : std::nullopt;
}

}  // namespace

std::optional<KernelTiling> tiling_of_kernel(std::string_view name) {
  if (auto args = template_args(name, "fused_sm90_kernel"); args.size() == 3) {
    const auto hdim = hdim_arg(args[1]);
    const auto schedule = enum_arg<kernels::fused_sm90::Schedule>(args[2], parse_sm90_schedule, 3);
    if (!hdim || !schedule || !kernels::fused_sm90::supported_hdim(static_cast<int>(*hdim))) return std::nullopt;
    return KernelTiling{"fused-sm90", std::string(kernels::fused_sm90::to_string(*schedule)), *hdim,
                        kernels::fused_sm90::kBlockM};
  }
  if (auto args = template_args(name, "fused_attention_kernel"); args.size() == 3) {
    const auto hdim = hdim_arg(args[1]);
    const auto variant = enum_arg<kernels::fused::TileVariant>(
        args[2], parse_fused_variant, static_cast<int>(std::size(kernels::fused::kTileVariants)));
    if (!hdim || !variant || !kernels::fused::supported_hdim(static_cast<int>(*hdim))) return std::nullopt;
    return KernelTiling{"fused", std::string(kernels::fused::to_string(*variant)), *hdim,
                        kernels::fused::tile_config(static_cast<int>(*hdim), *variant).block_m};
  }
  return std::nullopt;
}

std::optional<RecordTiling> tiling_of_record(const Record& r) {
  // The tile headers describe the forward kernels: a backward call's kernels split their work by key
  // tiles, which none of them describes.
  if (r.shape.backward()) return std::nullopt;
  for (const auto& l : r.launches) {
    if (auto t = tiling_of_kernel(l.name)) return RecordTiling{*t, l.grid[0] * l.grid[1] * l.grid[2]};
  }
  if (auto t = tiling_of_kernel(r.occupancy.kernel)) return RecordTiling{*t, r.occupancy.grid_blocks};
  return std::nullopt;
}

std::optional<PersistentSplit> persistent_split(const KernelTiling& t, const Shape& s, int64_t grid) {
  namespace sm90 = kernels::fused_sm90;
  if (t.family != "fused-sm90" || grid <= 0) return std::nullopt;
  const long long blocks = sm90::m_blocks(s.seq_q);
  const long long batch_heads = s.batch * s.heads;
  const long long tiles = blocks * batch_heads;
  if (tiles <= 0 || grid >= tiles) return std::nullopt;
  PersistentSplit split;
  split.tiles = tiles;
  split.grid = grid;
  // The kernel's own plan decides the tile order of a causal or windowed shape for this grid; a grid
  // other than the plan's (an older build) is read in plain order.
  const int bn = s.quantized_q() ? sm90::fp8::block_n() : sm90::block_n(static_cast<int>(t.hdim));
  const bool uneven = s.causal || s.window > 0;
  if (uneven) {
    const sm90::GridPlan plan =
        sm90::plan_grid(s.seq_q, s.seq_k, batch_heads, s.causal, static_cast<int>(grid), s.window, bn);
    split.rotated = plan.grid == grid && plan.rotated;
  }
  auto cost = [&](long long tile) -> double {
    if (!uneven) return 1;
    return static_cast<double>(sm90::work_tile_cost(tile, s.seq_q, s.seq_k, s.causal, s.window, split.rotated, bn));
  };
  double total = 0;
  for (long long b = 0; b < grid; ++b) {
    double mine = 0;
    long long count = 0;
    for (long long tile = b; tile < tiles; tile += grid) {
      mine += cost(tile);
      ++count;
    }
    total += mine;
    split.work_max = std::max(split.work_max, mine);
    split.tiles_per_cta_max = std::max(split.tiles_per_cta_max, static_cast<double>(count));
  }
  split.tiles_per_cta_mean = static_cast<double>(tiles) / static_cast<double>(grid);
  split.work_mean = total / static_cast<double>(grid);
  split.idle_share = split.work_max > 0 ? 1 - split.work_mean / split.work_max : 0;
  return split;
}

}  // namespace attnprof::core
