#include "kernels/catalogue.hpp"

#include <algorithm>

#include "core/shape.hpp"
#include "kernels/registry.hpp"

namespace attnprof::kernels {

namespace {

constexpr int kProbeHdims[] = {32, 64, 80, 96, 128, 192, 256};
constexpr core::DType kProbeDtypes[] = {core::DType::fp16, core::DType::bf16, core::DType::fp32};

core::Shape base_shape() {
  core::Shape s;
  s.batch = 1;
  s.heads = 8;
  s.kv_heads = 8;
  s.seq_q = 256;
  s.seq_k = 256;
  s.hdim = 128;
  s.dtype = core::DType::bf16;
  return s;
}

// A kernel that cannot even answer (a CUDA kernel asked on a machine without a GPU) refuses.
std::string reason_of(const Kernel& k, const core::Shape& s) {
  try {
    return support_reason(k, s);
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

std::vector<CatalogueEntry> catalogue() { return catalogue(all_registered()); }

std::vector<CatalogueEntry> catalogue(const std::vector<const Kernel*>& kernels) {
  std::vector<CatalogueEntry> out;
  for (const Kernel* k : kernels) {
    CatalogueEntry e;
    e.name = k->name();
    e.backend = std::string(to_string(k->backend()));
    e.origin = k->origin();
    e.description = k->description();
    e.layout = std::string(to_string(k->layout()));
    if (k->pure()) e.flags.push_back("pure");
    // CUDA graphs are the CUDA backend's: on the CPU backend the flag would hold for every kernel and mean nothing.
    if (k->graph_capturable() && k->backend() == core::BackendKind::cuda) e.flags.push_back("graph");
    if (k->needs_zeroed_workspace()) e.flags.push_back("zero-workspace");
    if (k->writes_lse()) e.flags.push_back("lse");
    const auto note = [&](const std::string& why) {
      if (e.example_refusal.empty() && !why.empty()) e.example_refusal = why;
      return why.empty();
    };
    for (int hdim : kProbeHdims) {
      for (core::DType dtype : kProbeDtypes) {
        core::Shape s = base_shape();
        s.hdim = hdim;
        s.dtype = dtype;
        if (!note(reason_of(*k, s))) continue;
        if (std::find(e.hdims.begin(), e.hdims.end(), hdim) == e.hdims.end()) e.hdims.push_back(hdim);
        const std::string name(core::to_string(dtype));
        if (std::find(e.dtypes.begin(), e.dtypes.end(), name) == e.dtypes.end()) e.dtypes.push_back(name);
      }
    }
    core::Shape s = base_shape();
    if (!e.dtypes.empty()) s.dtype = core::parse_dtype(e.dtypes.front());
    if (!e.hdims.empty()) s.hdim = e.hdims.front();
    core::Shape causal = s;
    causal.causal = true;
    e.causal = note(reason_of(*k, causal));
    core::Shape gqa = s;
    gqa.kv_heads = 2;
    e.gqa = note(reason_of(*k, gqa));
    core::Shape decode = s;
    decode.seq_q = 1;
    decode.seq_k = 1024;
    e.seq_q_ne_seq_k = note(reason_of(*k, decode));
    core::Shape windowed = s;
    windowed.causal = true;
    windowed.window = 64;
    e.window = note(reason_of(*k, windowed));
    core::Shape packed = s;
    packed.causal = true;
    packed.seq_lens = {64, 256, 100};
    packed.batch = 3;
    packed.lengths = "list:64/256/100";
    e.varlen = note(reason_of(*k, packed));
    core::Shape mla = s;  // V and O narrower than Q and K, as DeepSeek's MLA prefill has them
    mla.hdim = 192;
    mla.hdim_v = 128;
    e.hdim_v = note(reason_of(*k, mla));
    core::Shape backward = s;
    backward.pass = core::Pass::bwd;
    e.backward = note(reason_of(*k, backward));
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace attnprof::kernels
