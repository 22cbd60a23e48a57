#include "kernels/plugin/plugin.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attnprof/plugin.h"
#include "core/errors.hpp"
#include "core/escape.hpp"
#include "core/sha256.hpp"
#include "kernels/registry.hpp"

namespace attnprof::kernels {

namespace {

namespace fs = std::filesystem;

constexpr uint32_t kKnownLayouts = ATTNPROF_LAYOUT_BHSD | ATTNPROF_LAYOUT_BSHD;
// The oldest ABI version a plugin may be built for (include/attnprof/plugin.h lists them).
constexpr uint32_t kOldestAbiVersion = 1;
constexpr uint32_t kAbiV1Flags = ATTNPROF_KERNEL_PURE | ATTNPROF_KERNEL_GRAPH_CAPTURABLE |
                                 ATTNPROF_KERNEL_ZERO_WORKSPACE | ATTNPROF_KERNEL_WRITES_LSE;
constexpr uint32_t kAbiV2Flags =
    kAbiV1Flags | ATTNPROF_KERNEL_MASKS_WINDOW | ATTNPROF_KERNEL_RUNS_VARLEN | ATTNPROF_KERNEL_DISTINCT_HDIM_V;
constexpr uint32_t kAbiV3Flags = kAbiV2Flags | ATTNPROF_KERNEL_RUNS_BACKWARD;
constexpr uint32_t kAbiV4Flags = kAbiV3Flags | ATTNPROF_KERNEL_READS_QUANTIZED_KV | ATTNPROF_KERNEL_RUNS_FP8;
static_assert(ATTNPROF_PLUGIN_ABI_VERSION == 4, "a new ABI version needs its flags here and its fields in to_c");

// The flag bits a plugin built for `abi_version` may declare (a supported version).
constexpr uint32_t known_flags(uint32_t abi_version) {
  constexpr uint32_t kFlags[] = {kAbiV1Flags, kAbiV2Flags, kAbiV3Flags, kAbiV4Flags};
  return kFlags[abi_version - 1];
}

// The flags version 2 added, by name.
constexpr std::pair<uint32_t, std::string_view> kAbiV2FlagNames[] = {
    {ATTNPROF_KERNEL_MASKS_WINDOW, "ATTNPROF_KERNEL_MASKS_WINDOW"},
    {ATTNPROF_KERNEL_RUNS_VARLEN, "ATTNPROF_KERNEL_RUNS_VARLEN"},
    {ATTNPROF_KERNEL_DISTINCT_HDIM_V, "ATTNPROF_KERNEL_DISTINCT_HDIM_V"},
};

// The flag bits of version 2 a version-1 plugin declared, by name ("ATTNPROF_KERNEL_MASKS_WINDOW").
std::string v2_flag_names(uint32_t flags) {
  std::vector<std::string_view> names;
  for (const auto& [bit, name] : kAbiV2FlagNames)
    if ((flags & bit) != 0) names.push_back(name);
  return fmt::format("{}", fmt::join(names, " and "));
}
constexpr uint32_t kMaxKernels = 256;
constexpr size_t kMaxNameLength = 64;
constexpr size_t kMessageBytes = 512;

// A plugin's message (at most kMessageBytes of it) as every one-line message is escaped: control
// characters visible, bytes that are not UTF-8 as \xNN, so it can travel in JSON and print on one line.
std::string one_line(const char* text, const char* fallback) {
  if (text == nullptr || text[0] == '\0') return fallback;
  return core::escape::one_line(std::string_view(text, strnlen(text, kMessageBytes)));
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == ':' || c == '-';
  });
}

int32_t to_c(core::DType d) {
  switch (d) {
    case core::DType::fp32: return ATTNPROF_DTYPE_FP32;
    case core::DType::fp16: return ATTNPROF_DTYPE_FP16;
    case core::DType::bf16: return ATTNPROF_DTYPE_BF16;
    case core::DType::fp8_e4m3: return ATTNPROF_DTYPE_FP8_E4M3;
  }
  throw std::logic_error("to_c: an unknown dtype");
}

int32_t to_c(core::KvDType d) {
  switch (d) {
    case core::KvDType::none: return ATTNPROF_KV_DTYPE_NONE;
    case core::KvDType::fp8_e4m3: return ATTNPROF_KV_DTYPE_FP8_E4M3;
    case core::KvDType::int8: return ATTNPROF_KV_DTYPE_INT8;
  }
  throw std::logic_error("to_c: an unknown kv_dtype");
}

int32_t to_c(core::KvScale g) {
  switch (g) {
    case core::KvScale::tensor: return ATTNPROF_KV_SCALE_TENSOR;
    case core::KvScale::head: return ATTNPROF_KV_SCALE_HEAD;
    case core::KvScale::token: return ATTNPROF_KV_SCALE_TOKEN;
  }
  throw std::logic_error("to_c: an unknown kv_scale");
}

attnprof_shape to_c(const core::Shape& s) {
  attnprof_shape c{};
  c.batch = s.batch;
  c.heads = s.heads;
  c.kv_heads = s.kv_heads;
  c.seq_q = s.seq_q;
  c.seq_k = s.seq_k;
  c.hdim = s.hdim;
  c.causal = s.causal ? 1 : 0;
  c.dtype = to_c(s.dtype);  // FP8_E4M3 only for a kernel of version 4 that runs fp8
  // ABI version 2's fields. A version-1 plugin's attnprof_shape ends before them, and support_reason
  // never gives it a windowed, packed or distinct-hdim_v point.
  c.window = s.window;
  c.hdim_v = s.value_hdim();
  if (s.varlen()) {
    c.packed_seqs = s.batch;
    c.max_seqlen = s.seq_q;
    c.total_tokens = s.tokens_q();
  }
  // ABI version 3's; an older plugin is never given a backward point.
  c.pass = s.pass == core::Pass::fwd ? ATTNPROF_PASS_FWD : s.pass == core::Pass::bwd ? ATTNPROF_PASS_BWD
                                                                                      : ATTNPROF_PASS_FWD_BWD;
  // ABI version 4's; an older plugin is never given a quantized or fp8 point. An fp8 point's K and V
  // are E4M3 at one scale per tensor (core/shape.hpp's DType::fp8_e4m3), which is what these say.
  if (s.quantized_q()) {
    c.kv_dtype = ATTNPROF_KV_DTYPE_FP8_E4M3;
    c.kv_scale = ATTNPROF_KV_SCALE_TENSOR;
    c.kv_scale_elems = 1;
  } else {
    c.kv_dtype = to_c(s.kv_dtype);
    c.kv_scale = to_c(s.kv_scale);
    c.kv_scale_elems = s.kv_scale_elems();
  }
  return c;
}

// Strides in elements for (batch, head, seq, hdim) of a [batch, heads, seq, hdim] tensor. A packed
// batch's tensors are one batch entry of all its tokens (plugin.h): seq is then the batch's tokens
// and the batch stride 0, so that row cu_seqlens[b] + i of entry b is token i of sequence b.
attnprof_tensor tensor_of(const void* data, Layout layout, int64_t heads, int64_t seq, int64_t hdim, bool packed) {
  attnprof_tensor t{};
  t.data = static_cast<attnprof_deviceptr>(reinterpret_cast<uintptr_t>(data));
  if (layout == Layout::bhsd) {
    t.stride[0] = heads * seq * hdim, t.stride[1] = seq * hdim, t.stride[2] = hdim, t.stride[3] = 1;
  } else {
    t.stride[0] = seq * heads * hdim, t.stride[1] = hdim, t.stride[2] = heads * hdim, t.stride[3] = 1;
  }
  if (packed) t.stride[0] = 0;
  return t;
}

// A plugin function that threw (C++ plugins can) is a failure of that call, not of attnprof.
template <typename Fn>
auto guarded(const std::string& what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{} threw: {}", what, one_line(e.what(), "an exception")));
  } catch (...) {
    throw std::runtime_error(fmt::format("{} threw an exception that is not a std::exception", what));
  }
}

class PluginCall final : public Call {
 public:
  PluginCall(const attnprof_kernel& k, std::string name, void* state, void* stream)
      : k_(k), name_(std::move(name)), state_(state), stream_(static_cast<attnprof_stream>(stream)) {}
  ~PluginCall() override {
    if (k_.release == nullptr) return;
    try {
      k_.release(k_.user, state_);
    } catch (...) {
      // Nothing to report to from a destructor; the point's record already holds its outcome.
    }
  }
  PluginCall(const PluginCall&) = delete;
  PluginCall& operator=(const PluginCall&) = delete;

  void launch(StageHook*) override {
    std::array<char, kMessageBytes> error{};
    const int rc = guarded(name_ + ": launch()", [&] { return k_.launch(state_, stream_, error.data(), error.size()); });
    if (rc != ATTNPROF_OK)
      throw std::runtime_error(fmt::format("{}: launch() failed ({}): {}", name_, rc, one_line(error.data(), "no message")));
  }

  void write_output() override {
    if (k_.write_output == nullptr) return;
    std::array<char, kMessageBytes> error{};
    const int rc = guarded(name_ + ": write_output()",
                           [&] { return k_.write_output(state_, stream_, error.data(), error.size()); });
    if (rc != ATTNPROF_OK)
      throw std::runtime_error(
          fmt::format("{}: write_output() failed ({}): {}", name_, rc, one_line(error.data(), "no message")));
  }

 private:
  const attnprof_kernel& k_;
  std::string name_;
  void* state_;
  attnprof_stream stream_;
};

class PluginKernel final : public Kernel {
 public:
  PluginKernel(const attnprof_kernel& k, std::string origin, uint32_t abi_version)
      : k_(k), origin_(std::move(origin)), abi_version_(abi_version) {}

  std::string name() const override { return k_.name; }
  Backend backend() const override { return k_.backend == ATTNPROF_BACKEND_CUDA ? Backend::cuda : Backend::cpu; }
  core::KernelKind kind() const override { return core::KernelKind::fused; }
  std::string description() const override { return one_line(k_.description, ""); }
  std::string origin() const override { return origin_; }
  Layout layout() const override { return (k_.layouts & ATTNPROF_LAYOUT_BHSD) != 0 ? Layout::bhsd : Layout::bshd; }
  bool writes_lse() const override { return (k_.flags & ATTNPROF_KERNEL_WRITES_LSE) != 0; }
  bool pure() const override { return (k_.flags & ATTNPROF_KERNEL_PURE) != 0; }
  bool graph_capturable() const override { return (k_.flags & ATTNPROF_KERNEL_GRAPH_CAPTURABLE) != 0; }
  bool needs_zeroed_workspace() const override { return (k_.flags & ATTNPROF_KERNEL_ZERO_WORKSPACE) != 0; }
  bool masks_window() const override { return (k_.flags & ATTNPROF_KERNEL_MASKS_WINDOW) != 0; }
  bool runs_varlen() const override { return (k_.flags & ATTNPROF_KERNEL_RUNS_VARLEN) != 0; }
  std::string no_window_reason() const override {
    if (abi_version_ == 1)
      return name() + " cannot be given a sliding window (plugin ABI version 1's attnprof_shape has no window field)";
    return name() + " does not declare ATTNPROF_KERNEL_MASKS_WINDOW (it applies no sliding window)";
  }
  std::string no_varlen_reason() const override {
    if (abi_version_ == 1)
      return name() + " cannot be given a packed variable-length batch (plugin ABI version 1's attnprof_shape has no "
                      "cu_seqlens)";
    return name() + " does not declare ATTNPROF_KERNEL_RUNS_VARLEN (it runs no packed variable-length batch)";
  }
  // Whatever a plugin does on the host (Python, planning) must not show as GPU time.
  bool host_side_heavy() const override { return true; }
  bool runs_distinct_hdim_v() const override { return (k_.flags & ATTNPROF_KERNEL_DISTINCT_HDIM_V) != 0; }
  bool runs_backward() const override { return (k_.flags & ATTNPROF_KERNEL_RUNS_BACKWARD) != 0; }
  std::string no_backward_reason() const override {
    if (abi_version_ < 3)
      return fmt::format("{} cannot be given a backward pass (plugin ABI version {} has no gradient tensors)", name(),
                         abi_version_);
    return name() + " does not declare ATTNPROF_KERNEL_RUNS_BACKWARD (it runs the forward pass only)";
  }
  bool reads_quantized_kv() const override { return (k_.flags & ATTNPROF_KERNEL_READS_QUANTIZED_KV) != 0; }
  std::string no_quantized_kv_reason() const override {
    if (abi_version_ < 4)
      return fmt::format("{} cannot be given a quantized KV cache (plugin ABI version {} has no KV scales)", name(),
                         abi_version_);
    return name() + " does not declare ATTNPROF_KERNEL_READS_QUANTIZED_KV (it reads K and V in the dtype only)";
  }
  bool runs_fp8() const override { return (k_.flags & ATTNPROF_KERNEL_RUNS_FP8) != 0; }
  std::string no_fp8_reason() const override {
    if (abi_version_ < 4)
      return fmt::format("{} cannot be given fp8 Q, K and V (plugin ABI version {} has no fp8 dtype)", name(),
                         abi_version_);
    return name() + " does not declare ATTNPROF_KERNEL_RUNS_FP8 (it runs fp16, bf16 and fp32 inputs only)";
  }
  std::string no_hdim_v_reason() const override {
    if (abi_version_ == 1) return "plugin ABI version 1's attnprof_shape has one hdim";
    return "the plugin does not declare ATTNPROF_KERNEL_DISTINCT_HDIM_V";
  }

  std::string unsupported_reason(const core::Shape& shape) const override {
    const attnprof_shape c = to_c(shape);
    std::array<char, kMessageBytes> reason{};
    const int runs = guarded(name() + ": supports()",
                             [&] { return k_.supports(k_.user, &c, reason.data(), reason.size()); });
    return runs != 0 ? std::string() : one_line(reason.data(), "the plugin's supports() refused it without a reason");
  }

  size_t workspace_bytes(const core::Shape& shape) const override {
    if (k_.workspace_bytes == nullptr) return 0;
    const attnprof_shape c = to_c(shape);
    return static_cast<size_t>(guarded(name() + ": workspace_bytes()", [&] { return k_.workspace_bytes(k_.user, &c); }));
  }

  std::unique_ptr<Call> prepare(const AttentionArgs& args) const override {
    const core::Shape& s = args.shape;
    const attnprof_shape c = to_c(s);
    const bool packed = s.varlen();
    const int64_t rows_q = packed ? s.tokens_q() : s.seq_q, rows_k = packed ? s.tokens_k() : s.seq_k;
    attnprof_tensors t{};
    t.struct_size = sizeof(attnprof_tensors);
    t.layout = args.layout == Layout::bhsd ? ATTNPROF_LAYOUT_BHSD : ATTNPROF_LAYOUT_BSHD;
    t.element_dtype = backend() == Backend::cpu ? ATTNPROF_DTYPE_FP32 : to_c(s.out_dtype());
    t.q = tensor_of(args.q, args.layout, s.heads, rows_q, s.hdim, packed);
    t.k = tensor_of(args.k, args.layout, s.kv_heads, rows_k, s.hdim, packed);
    t.v = tensor_of(args.v, args.layout, s.kv_heads, rows_k, s.value_hdim(), packed);
    t.o = tensor_of(args.o, args.layout, s.heads, rows_q, s.value_hdim(), packed);
    t.lse = tensor_of(writes_lse() ? args.lse : nullptr, Layout::bhsd, s.heads, rows_q, 1, packed);
    t.workspace = static_cast<attnprof_deviceptr>(reinterpret_cast<uintptr_t>(args.workspace));
    t.workspace_bytes = args.workspace_bytes;
    t.softmax_scale = core::softmax_scale(s);
    t.cu_seqlens = static_cast<attnprof_deviceptr>(reinterpret_cast<uintptr_t>(args.cu_seqlens));
    if (s.backward()) {
      t.d_o = tensor_of(args.d_o, args.layout, s.heads, rows_q, s.value_hdim(), packed);
      t.dq = tensor_of(args.dq, args.layout, s.heads, rows_q, s.hdim, packed);
      t.dk = tensor_of(args.dk, args.layout, s.kv_heads, rows_k, s.hdim, packed);
      t.dv = tensor_of(args.dv, args.layout, s.kv_heads, rows_k, s.value_hdim(), packed);
    }
    t.q_scale = static_cast<attnprof_deviceptr>(reinterpret_cast<uintptr_t>(args.q_scale));
    t.k_scale = static_cast<attnprof_deviceptr>(reinterpret_cast<uintptr_t>(args.k_scale));
    t.v_scale = static_cast<attnprof_deviceptr>(reinterpret_cast<uintptr_t>(args.v_scale));
    void* state = nullptr;
    std::array<char, kMessageBytes> error{};
    const int rc = guarded(name() + ": prepare()",
                           [&] { return k_.prepare(k_.user, &c, &t, &state, error.data(), error.size()); });
    if (rc == ATTNPROF_UNSUPPORTED) throw Unsupported(one_line(error.data(), "prepare() refused the shape without a reason"));
    if (rc != ATTNPROF_OK)
      throw std::runtime_error(fmt::format("{}: prepare() failed ({}): {}", name(), rc, one_line(error.data(), "no message")));
    return std::make_unique<PluginCall>(k_, name(), state, args.stream);
  }

  void launch(const AttentionArgs& args, StageHook* hook) const override { prepare(args)->launch(hook); }

 private:
  const attnprof_kernel& k_;
  std::string origin_;
  uint32_t abi_version_;
};

// Every field a kernel entry must have, checked before anything of it is called.
void validate_kernel(const std::string& path, uint32_t abi_version, uint32_t index, const attnprof_kernel& k) {
  const auto bad = [&](const std::string& what) {
    return InputError(fmt::format("plugin '{}': kernel #{} {}", path, index, what));
  };
  if (k.struct_size != sizeof(attnprof_kernel))
    throw bad(fmt::format("has struct_size {}, expected {} (built against another plugin.h?)", k.struct_size,
                          sizeof(attnprof_kernel)));
  if (k.name == nullptr) throw bad("has no name");
  const std::string name(k.name, strnlen(k.name, kMaxNameLength + 1));
  if (!valid_name(name))
    throw bad(fmt::format("has the invalid name '{}' (1-{} characters of A-Z a-z 0-9 _ . : -)", one_line(name.c_str(), ""),
                          kMaxNameLength));
  const auto bad_named = [&](const std::string& what) {
    return InputError(fmt::format("plugin '{}': kernel '{}' {}", path, name, what));
  };
  if (k.description == nullptr) throw bad_named("has no description");
  if (k.backend != ATTNPROF_BACKEND_CPU && k.backend != ATTNPROF_BACKEND_CUDA)
    throw bad_named(fmt::format("has the unknown backend {} (0 cpu, 1 cuda)", k.backend));
  if (k.cost_model != ATTNPROF_COST_ATTENTION_FWD)
    throw bad_named(fmt::format("has the unknown cost model {}", k.cost_model));
  if ((k.layouts & kKnownLayouts) == 0 || (k.layouts & ~kKnownLayouts) != 0)
    throw bad_named(fmt::format("has layouts 0x{:x}: at least one of ATTNPROF_LAYOUT_BHSD, _BSHD and no other bit", k.layouts));
  if (abi_version == 1 && (k.flags & ~kAbiV1Flags & kAbiV2Flags) != 0)
    throw bad_named(fmt::format("declares {} under plugin ABI version 1, which has no such flag (build against "
                                "plugin ABI version {})",
                                v2_flag_names(k.flags), ATTNPROF_PLUGIN_ABI_VERSION));
  if (const uint32_t unknown = k.flags & ~known_flags(abi_version); unknown != 0)
    throw bad_named(fmt::format("has unknown flag bits 0x{:x}", unknown));
  if (k.supports == nullptr) throw bad_named("has no supports() function");
  if (k.prepare == nullptr) throw bad_named("has no prepare() function");
  if (k.launch == nullptr) throw bad_named("has no launch() function");
}

}  // namespace

PluginInfo load_plugin(const std::string& path_as_given, const std::string& expected_sha256) {
  // Messages name the path as given, escaped (it may hold any byte); dlopen takes its bytes.
  const std::string given_path = core::escape::one_line(path_as_given);
  std::error_code ec;
  const fs::path absolute = fs::absolute(path_as_given, ec);
  const std::string path = ec ? path_as_given : absolute.lexically_normal().string();
  if (!fs::exists(path, ec)) throw InputError(fmt::format("plugin '{}': no such file", given_path));
  if (!fs::is_regular_file(path, ec)) throw InputError(fmt::format("plugin '{}': not a regular file", given_path));

  PluginInfo info;
  info.path = path;
  info.sha256 = core::sha256_file(path);
  if (!expected_sha256.empty() && info.sha256 != expected_sha256)
    throw PluginChanged(fmt::format("plugin '{}' changed on disk during the sweep (sha256 {} at its start, {} now): "
                                    "its points were not measured with another build's code",
                                    given_path, expected_sha256.substr(0, 16),
                                    info.sha256.substr(0, 16)));
  // RTLD_LOCAL: two plugins may define the same symbols. Never closed: its kernels live in the registry.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    throw InputError(fmt::format("plugin '{}' is not a loadable shared library: {}", given_path,
                                       one_line(::dlerror(), "dlopen failed")));
  auto entry = reinterpret_cast<attnprof_plugin_entry_fn>(::dlsym(handle, ATTNPROF_PLUGIN_ENTRY_NAME));
  if (entry == nullptr)
    throw InputError(fmt::format("plugin '{}' exports no {}() (see docs/plugins.md)", given_path,
                                       ATTNPROF_PLUGIN_ENTRY_NAME));
  const attnprof_plugin* table = guarded(fmt::format("plugin '{}': {}()", given_path, ATTNPROF_PLUGIN_ENTRY_NAME),
                                         [&] { return entry(); });
  if (table == nullptr)
    throw InputError(fmt::format("plugin '{}': {}() returned no table", given_path, ATTNPROF_PLUGIN_ENTRY_NAME));
  if (table->abi_version < kOldestAbiVersion || table->abi_version > ATTNPROF_PLUGIN_ABI_VERSION)
    throw InputError(fmt::format("plugin '{}' was built for plugin ABI version {}, this attnprof speaks versions {} to {}",
                                 given_path, table->abi_version, kOldestAbiVersion, ATTNPROF_PLUGIN_ABI_VERSION));
  if (table->struct_size != sizeof(attnprof_plugin) || table->kernel_struct_size != sizeof(attnprof_kernel))
    throw InputError(fmt::format(
        "plugin '{}': struct sizes {}/{} differ from this attnprof's {}/{} (built against another plugin.h?)",
        given_path, table->struct_size, table->kernel_struct_size, sizeof(attnprof_plugin), sizeof(attnprof_kernel)));
  if (table->kernel_count == 0 || table->kernels == nullptr)
    throw InputError(fmt::format("plugin '{}' declares no kernels", given_path));
  if (table->kernel_count > kMaxKernels)
    throw InputError(fmt::format("plugin '{}' declares {} kernels, more than {}", given_path,
                                       table->kernel_count, kMaxKernels));
  info.name = one_line(table->name, "unnamed");
  info.version = one_line(table->version, "unversioned");
  info.abi_version = static_cast<int>(table->abi_version);

  // Check the whole table before registering any of it: a bad plugin leaves no kernel behind.
  std::vector<std::string> names;
  for (uint32_t i = 0; i < table->kernel_count; ++i) {
    const attnprof_kernel& k = table->kernels[i];
    validate_kernel(given_path, table->abi_version, i, k);
    const std::string name = k.name;
    if (const Kernel* taken = find_any(name))
      throw InputError(fmt::format("plugin '{}': kernel name '{}' is already taken ({})", given_path, name,
                                   core::escape::one_line(taken->origin())));
    if (std::find(names.begin(), names.end(), name) != names.end())
      throw InputError(fmt::format("plugin '{}' declares the kernel '{}' twice", given_path, name));
    names.push_back(name);
  }
  const std::string origin = fmt::format("plugin {} {} ({})", info.name, info.version, core::escape::one_line(path));
  for (uint32_t i = 0; i < table->kernel_count; ++i)
    register_owned(std::make_unique<PluginKernel>(table->kernels[i], origin, table->abi_version));
  info.kernels = names;
  return info;
}

namespace {

class DescribedKernel final : public Kernel {
 public:
  explicit DescribedKernel(PluginKernelInfo info) : info_(std::move(info)) {}
  std::string name() const override { return info_.name; }
  Backend backend() const override { return info_.backend == "cuda" ? Backend::cuda : Backend::cpu; }
  core::KernelKind kind() const override { return core::KernelKind::fused; }
  std::string description() const override { return info_.description; }
  std::string origin() const override { return info_.origin; }
  std::string unsupported_reason(const core::Shape&) const override { refuse("supports()"); }
  size_t workspace_bytes(const core::Shape&) const override { refuse("workspace_bytes()"); }
  void launch(const AttentionArgs&, StageHook*) const override { refuse("launch()"); }

 private:
  [[noreturn]] void refuse(const char* what) const {
    throw std::logic_error(fmt::format("{}: {} runs only in a worker process, where the plugin is loaded", info_.name, what));
  }
  PluginKernelInfo info_;
};

}  // namespace

PluginKernelInfo info_of(std::string_view kernel_name) {
  const Kernel* k = find_any(kernel_name);
  if (k == nullptr) throw std::logic_error(fmt::format("no registered kernel '{}'", kernel_name));
  return {k->name(), std::string(to_string(k->backend())), k->description(), k->origin()};
}

void register_described(const PluginKernelInfo& info) {
  if (!valid_name(info.name)) throw InputError(fmt::format("a plugin kernel has the invalid name '{}'", core::escape::one_line(info.name)));
  if (const Kernel* taken = find_any(info.name))
    throw InputError(fmt::format("kernel name '{}' is already taken ({})", info.name, core::escape::one_line(taken->origin())));
  register_owned(std::make_unique<DescribedKernel>(info));
}

bool is_python_kernel(const std::string& name) { return name.starts_with("torch:") || name.starts_with("py:"); }

std::string find_python_bridge(const std::string& given) {
  constexpr const char* kFile = "attnprof_python.so";
  std::vector<fs::path> candidates;
  if (!given.empty()) {
    candidates.push_back(given);
  } else if (const char* env = std::getenv("ATTNPROF_PYTHON_BRIDGE"); env != nullptr && *env != '\0') {
    candidates.push_back(env);
  } else {
    std::error_code ec;
    const fs::path exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
    if (!ec) {
      candidates.push_back(exe_dir / "python" / kFile);
      candidates.push_back(exe_dir / ".." / "lib" / "attnprof" / kFile);
    }
  }
  for (const auto& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) return c.lexically_normal().string();
  }
  if (!given.empty()) throw InputError(fmt::format("--python-bridge '{}': no such file", given));
  throw InputError(fmt::format(
      "torch: and py: kernels need attnprof's Python bridge ({}), not found beside this attnprof: build it "
      "(cmake --build build --target attnprof_python; docs/python.md) or give --python-bridge PATH",
      kFile));
}

void configure_python_bridge(const std::vector<std::string>& kernel_names, const std::string& backend) {
  std::vector<std::string> python;
  for (const auto& n : kernel_names)
    if (n.starts_with("py:")) python.push_back(n);
  const std::string names = fmt::format("{}", fmt::join(python, ","));
  ::setenv("ATTNPROF_PYTHON_KERNELS", names.c_str(), 1);
  ::setenv("ATTNPROF_PYTHON_BACKEND", backend.c_str(), 1);
}

}  // namespace attnprof::kernels
