// The fused-auto selector (kernels/fused_auto.hpp) with stand-in kernels: it forwards to the preferred
// kernel where that one supports the shape, else to the fallback, and explains a shape neither runs.
// The registered instance is an alias that sweeps list only when asked for.
#include <catch2/catch.hpp>

#include <string>

#include "kernels/fused_auto.hpp"

namespace k = attnprof::kernels;
namespace core = attnprof::core;

namespace {

// Supports hdim up to max_hdim; counts its launches and remembers the hook it was given.
class StandIn final : public k::Kernel {
 public:
  StandIn(std::string name, int64_t max_hdim, bool backward = false)
      : name_(std::move(name)), max_hdim_(max_hdim), backward_(backward) {}
  bool runs_backward() const override { return backward_; }
  std::string name() const override { return name_; }
  k::Backend backend() const override { return k::Backend::cuda; }
  core::KernelKind kind() const override { return core::KernelKind::fused; }
  std::string description() const override { return name_; }
  std::string unsupported_reason(const core::Shape& s) const override {
    return s.hdim <= max_hdim_ ? "" : name_ + " needs hdim <= " + std::to_string(max_hdim_);
  }
  size_t workspace_bytes(const core::Shape&) const override { return static_cast<size_t>(max_hdim_); }
  std::vector<k::LaunchInfo> launch_info(const core::Shape&) const override { return {{name_ + "_kernel"}}; }
  void launch(const k::AttentionArgs&, k::StageHook* hook) const override {
    ++launches;
    last_hook = hook;
  }
  mutable int launches = 0;
  mutable k::StageHook* last_hook = nullptr;

 private:
  std::string name_;
  int64_t max_hdim_;
  bool backward_;
};

core::Shape shape_with_hdim(int64_t hdim) {
  core::Shape s;
  s.batch = 1;
  s.heads = s.kv_heads = 2;
  s.seq_q = s.seq_k = 64;
  s.hdim = hdim;
  s.dtype = core::DType::bf16;
  return s;
}

struct NullHook final : k::StageHook {
  void before_stage(int) override {}
  void after_last() override {}
};

}  // namespace

TEST_CASE("fused-auto runs the preferred kernel where it can, else the fallback") {
  const StandIn fast("fast", 128), portable("portable", 256);
  const k::FusedAutoKernel autok(std::vector<const k::Kernel*>{&fast, &portable});
  CHECK(autok.choose(shape_with_hdim(64)) == &fast);
  CHECK(autok.choose(shape_with_hdim(256)) == &portable);
  CHECK(autok.choose(shape_with_hdim(512)) == nullptr);

  CHECK(autok.unsupported_reason(shape_with_hdim(128)).empty());
  CHECK(autok.workspace_bytes(shape_with_hdim(128)) == 128);
  CHECK(autok.workspace_bytes(shape_with_hdim(200)) == 256);
  REQUIRE(autok.launch_info(shape_with_hdim(200)).size() == 1);
  CHECK(autok.launch_info(shape_with_hdim(200))[0].kernel_name == "portable_kernel");

  k::AttentionArgs args;
  args.shape = shape_with_hdim(64);
  NullHook hook;
  autok.launch(args, &hook);
  CHECK(fast.launches == 1);
  CHECK(fast.last_hook == &hook);  // the stage hook reaches the kernel that runs
  args.shape = shape_with_hdim(192);
  autok.launch(args);
  CHECK(portable.launches == 1);
  CHECK(fast.launches == 1);
}

TEST_CASE("fused-auto explains a shape that neither kernel runs, and refuses to launch it") {
  const StandIn fast("fast", 64), portable("portable", 128);
  const k::FusedAutoKernel autok(std::vector<const k::Kernel*>{&fast, &portable});
  const std::string why = autok.unsupported_reason(shape_with_hdim(512));
  CHECK(why.find("fast needs hdim <= 64") != std::string::npos);
  CHECK(why.find("portable needs hdim <= 128") != std::string::npos);
  CHECK(autok.launch_info(shape_with_hdim(512)).empty());
  k::AttentionArgs args;
  args.shape = shape_with_hdim(512);
  CHECK_THROWS_AS(autok.launch(args), std::runtime_error);

  const k::FusedAutoKernel missing(std::vector<std::string>{"no-such-kernel", "neither"});
  CHECK(missing.unsupported_reason(shape_with_hdim(64)).find("not built into this binary") != std::string::npos);
}

TEST_CASE("fused-auto walks its whole list in order, and a paged shape reaches only a paged kernel") {
  const StandIn narrow("narrow", 64), middle("middle", 128), wide("wide", 256);
  const k::FusedAutoKernel autok(std::vector<const k::Kernel*>{&narrow, &middle, &wide});
  CHECK(autok.choose(shape_with_hdim(64)) == &narrow);
  CHECK(autok.choose(shape_with_hdim(96)) == &middle);
  CHECK(autok.choose(shape_with_hdim(200)) == &wide);
  CHECK(autok.stage_names(shape_with_hdim(200)) == std::vector<std::string>{"wide"});
  core::Shape paged = shape_with_hdim(64);
  paged.page_size = 16;
  CHECK(autok.choose(paged) == nullptr);  // none of the stand-ins reads a paged cache
  CHECK(autok.unsupported_reason(paged).find("paged") != std::string::npos);
}

TEST_CASE("fused-auto sends a backward point to the first kernel that runs the backward") {
  const StandIn forward_only("forward-only", 256), trainer("trainer", 128, true);
  const k::FusedAutoKernel autok(std::vector<const k::Kernel*>{&forward_only, &trainer});
  core::Shape s = shape_with_hdim(64);
  CHECK(autok.choose(s) == &forward_only);
  s.pass = core::Pass::bwd;
  CHECK(k::support_reason(autok, s).empty());
  CHECK(autok.choose(s) == &trainer);
  s.hdim = 256;  // only the forward-only kernel has the head dim
  CHECK(autok.choose(s) == nullptr);
  const std::string why = k::support_reason(autok, s);
  CHECK(why.find("forward-only runs the forward pass only") != std::string::npos);
  CHECK(why.find("trainer needs hdim <= 128") != std::string::npos);
}

TEST_CASE("the registered fused-auto is an alias of decode, fused-sm90 and fused, not listed by default") {
  const k::Kernel* registered = k::find(k::Backend::cuda, "fused-auto");
#if ATTNPROF_HAVE_CUDA
  REQUIRE(registered != nullptr);
  CHECK_FALSE(registered->listed_by_default());
  CHECK(registered->description().find("decode, else fused-sm90, else fused") != std::string::npos);
  for (const k::Kernel* other : k::registered(k::Backend::cuda))
    if (other != registered) CHECK(other->listed_by_default());
#else
  CHECK(registered == nullptr);
#endif
}
