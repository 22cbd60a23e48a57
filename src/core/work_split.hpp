// How attnprof's own fused kernels split a call into work tiles, read from the kernel that ran: the
// launch record's kernel name carries the family, head dim and variant ("fused_attention_kernel<bf16,
// d128, small>", or demangled with the variant's enum value), the tile shapes come from the kernels'
// constexpr tile headers (core/tiles/fused_tiles.hpp, core/tiles/fused_sm90_tiles.hpp),
// and the grid from the launch record. Other kernels (plugins, cuDNN, PyTorch) have no known tiling.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/results.hpp"

namespace attnprof::core {

struct KernelTiling {
  std::string family;   // "fused" (mma.sync, one query tile per CTA) or "fused-sm90" (persistent)
  std::string variant;  // fused: "fast", "small", "warps8", "m64n32", "m64n64"; fused-sm90: "overlap", "pingpong", "serial"
  int64_t hdim = 0;
  int64_t query_tile_rows = 0;  // query rows per work tile
};

// The tiling named by one kernel name, short or demangled; nullopt for a kernel attnprof did not build.
std::optional<KernelTiling> tiling_of_kernel(std::string_view kernel_name);

// The tiling of the record's main kernel: its launch records first, else the occupancy's kernel name.
// grid_ctas: that launch's CTAs (grid x * y * z), else occupancy.grid_blocks. nullopt for a backward
// point (Shape::pass bwd or fwd_bwd): the tile headers are the forward kernels'.
struct RecordTiling {
  KernelTiling tiling;
  int64_t grid_ctas = 0;
};
std::optional<RecordTiling> tiling_of_record(const Record&);

// The work of a persistent grid (fewer CTAs than work tiles, each CTA taking tiles round-robin:
// b, b + grid, b + 2 grid, ...): tiles per CTA, and the idle share of the CTA-time while the busiest
// CTA finishes, 1 - mean / busiest, in units of work (tiles; with a causal mask key tiles visited plus
// the kernel's fixed cost per tile, core/tiles/fused_sm90_tiles.hpp). nullopt when the grid is
// not persistent (one CTA per tile: waves describe it) or the tiling is not fused-sm90's.
struct PersistentSplit {
  int64_t tiles = 0, grid = 0;
  double tiles_per_cta_max = 0, tiles_per_cta_mean = 0;
  double work_max = 0, work_mean = 0;  // [tiles, or key tiles with a causal mask]
  double idle_share = 0;
  bool rotated = false;  // causal tile order (fused_sm90::plan_grid)
};
std::optional<PersistentSplit> persistent_split(const KernelTiling&, const Shape&, int64_t grid_ctas);

}  // namespace attnprof::core
