// `attnprof explain --gpu h200 --shape "batch=8,heads=16,seq=2048,hdim=128,dtype=bf16" [--json]`:
// the cost model on the GPU's datasheet roofline for both kernel kinds; needs no GPU.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "core/explain.hpp"
#include "core/sweep_spec.hpp"
#include "report/outputs.hpp"

namespace attnprof::cli {

void add_explain(CLI::App& app, Run&) {
  struct Options {
    std::string gpu, shape;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "explain", "FLOPs, minimum bytes, roofline position and floor latency of one shape on a GPU's "
                 "datasheet ceilings, for the reference and the fused kernel (no GPU needed)");
  cmd->add_option("--gpu", opts->gpu, "datasheet key (h200, h100-sxm, a100-80gb, ...) or CUDA device name")
      ->required();
  cmd->add_option("--shape", opts->shape,
                  "one shape: \"batch=8,heads=16,seq=2048,hdim=128,dtype=bf16\" (also kv_heads, seq_k, "
                  "causal, tokens, dim; docs/sweep-spec.md)")
      ->required();
  cmd->add_flag("--json", opts->json, "print JSON instead of a table");
  cmd->callback([opts] {
    const auto explanation = core::explain(opts->gpu, core::parse_shape(opts->shape));
    const std::string text =
        opts->json ? report::render_explanation_json(explanation) : report::render_explanation(explanation);
    std::fputs(text.c_str(), stdout);
  });
}

}  // namespace attnprof::cli
