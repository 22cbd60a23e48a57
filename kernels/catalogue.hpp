// What `attnprof kernels` lists: every registered kernel (built-in and plugin), its backend, where it
// comes from, what it asks of the measurement, and which shapes it supports, found by asking its
// unsupported_reason() over a fixed grid of probe shapes.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnprof::kernels {

struct CatalogueEntry {
  std::string name, backend, origin, description, layout;
  std::vector<std::string> flags;  // "pure", "graph", "zero-workspace", "lse"
  std::vector<int> hdims;          // of the probe grid, those that run in some dtype
  std::vector<std::string> dtypes; // likewise
  // window: a sliding window; varlen: a packed variable-length batch; hdim_v: a value head dim other
  // than the query/key one (probed at 192 / 128); backward: the backward pass (Shape::pass bwd)
  bool causal = false, gqa = false, seq_q_ne_seq_k = false, window = false, varlen = false, hdim_v = false;
  bool backward = false;
  std::string example_refusal;     // one probe shape's reason, when some probe is refused
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CatalogueEntry, name, backend, origin, description, layout, flags, hdims, dtypes,
                                   causal, gqa, seq_q_ne_seq_k, window, varlen, hdim_v, backward,
                                   example_refusal)

class Kernel;
// The entries of `kernels`, in their order; catalogue() is every registered kernel's.
std::vector<CatalogueEntry> catalogue(const std::vector<const Kernel*>& kernels);
std::vector<CatalogueEntry> catalogue();

}  // namespace attnprof::kernels
