// The CPU backend: its host's description and roofline, and the steps of a point (CpuPoint) that
// the shared lifecycle (point_lifecycle.hpp) runs: host allocation, the call, steady_clock timing.
#include "measure/cpu_backend.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "core/cost_model.hpp"
#include "core/errors.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "kernels/common/layout.hpp"
#include "kernels/common/paged.hpp"
#include "kernels/common/random.hpp"
#include "kernels/common/verify.hpp"
#include "kernels/cpu/kv_cache.hpp"
#include "kernels/cpu/parallel.hpp"
#include "kernels/cpu/probes.hpp"
#include "measure/ceilings_cache.hpp"
#include "measure/point_lifecycle.hpp"
#include "measure/sampling.hpp"

namespace attnprof::measure {

namespace {

using Clock = std::chrono::steady_clock;

// Many server CPUs report only their per-core L2 in /proc/cpuinfo and nothing in sysfs inside
// containers; 32 MiB is the L3 of one current x86 chiplet, so a cold flush or a bandwidth buffer
// sized from this floor still spills out of cache there.
constexpr int64_t kAssumedMinLlcBytes = int64_t{32} << 20;
// Bandwidth buffers: each >= 4x the LLC and >= 128 MiB, so the stream (8x the LLC in all) runs from
// DRAM. Not larger: page faults in some sandboxes cost ~10 ms per MiB on first touch.
constexpr int64_t kMinStreamBufferBytes = int64_t{128} << 20;
constexpr int kProbeRepeats = 5;
constexpr double kFmaSecondsPerRun = 0.1;

// "key : value" lines of /proc/cpuinfo or /proc/meminfo; first occurrence of `key`.
std::string proc_field(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const std::string_view text = line;
    const auto colon = text.find(':');
    if (colon == std::string_view::npos) continue;
    if (core::trim(text.substr(0, colon)) == key) return std::string(core::trim(text.substr(colon + 1)));
  }
  return {};
}

// "32768K", "1024 KB", "8M" -> bytes; 0 when unparsable.
int64_t parse_size(const std::string& text) {
  std::istringstream in(text);
  double value = 0;
  std::string unit;
  if (!(in >> value)) return 0;
  in >> unit;
  const char u = unit.empty() ? ' ' : static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
  const double mult = u == 'K' ? 1024.0 : u == 'M' ? 1048576.0 : u == 'G' ? 1073741824.0 : 1.0;
  return static_cast<int64_t>(value * mult);
}

int64_t llc_from_sysfs() {
  int64_t best_level = 0, best_bytes = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", index);
    std::ifstream level_file(dir + "level"), size_file(dir + "size"), type_file(dir + "type");
    int64_t level = 0;
    std::string size, type;
    if (!(level_file >> level) || !(size_file >> size)) continue;
    type_file >> type;
    if (type == "Instruction") continue;
    if (level >= best_level) {
      best_level = level;
      best_bytes = parse_size(size);
    }
  }
  return best_bytes;
}

// A host buffer, allocated uninitialised: value-initialising a vector would touch (and fault in) every
// page from one thread before the parallel fill or the kernel touches it again.
template <typename T>
class HostBuffer {
 public:
  explicit HostBuffer(int64_t elems) : size_(elems), data_(elems > 0 ? new T[static_cast<size_t>(elems)] : nullptr) {}
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  int64_t size() const { return size_; }
  void fill(T value) {
    T* p = data_.get();
    kernels::parallel_for(size_, 1 << 16, [&](int64_t lo, int64_t hi) { std::fill(p + lo, p + hi, value); });
  }

 private:
  int64_t size_;
  std::unique_ptr<T[]> data_;
};
// The fp32 tensors: Q, O, LSE, an unquantized K and V, the workspace, a backward's dO and gradients.
using HostTensor = HostBuffer<float>;

// Timestamps between the stages of one call.
class StageClock final : public kernels::StageHook {
 public:
  explicit StageClock(size_t stages) : starts_(stages) {}
  void before_stage(int index) override { starts_.at(static_cast<size_t>(index)) = Clock::now(); }
  void after_last() override { end_ = Clock::now(); }
  // Microseconds of each stage: from its start to the next stage's start (the last: to the end).
  std::vector<double> stage_us() const {
    std::vector<double> out;
    for (size_t i = 0; i < starts_.size(); ++i) {
      const auto stop = i + 1 < starts_.size() ? starts_[i + 1] : end_;
      out.push_back(std::chrono::duration<double, std::micro>(stop - starts_[i]).count());
    }
    return out;
  }

 private:
  std::vector<Clock::time_point> starts_;
  Clock::time_point end_;
};

// The shape of a backward point's untimed forward (Shape::pass fwd on the same buffers).
core::Shape forward_of(core::Shape s) {
  s.pass = core::Pass::fwd;
  return s;
}

// Workspace of the point's calls: a bwd point's forward call shares it with the backward call.
size_t workspace_of(const core::Shape& s, const kernels::Kernel& kernel) {
  const size_t own = kernel.workspace_bytes(s);
  return s.pass == core::Pass::bwd ? std::max(own, kernel.workspace_bytes(forward_of(s))) : own;
}

// Host memory one call of `kernel` needs on the CPU backend: every tensor is fp32 here (a backward's
// dO, dQ, dK and dV too) but a quantized K and V and fp8 prefill's Q, one byte per element with float32
// scales; K and V as allocated (a paged cache's pools, with the block table).
double cpu_footprint_bytes(const core::Shape& s, const kernels::Kernel& kernel) {
  const double kv_elem_bytes = s.quantized_kv() ? 1.0 : sizeof(float);
  const double kv_bytes = static_cast<double>(s.kv_buffer_elems() + s.v_buffer_elems()) * kv_elem_bytes +
                          sizeof(float) * 2 * static_cast<double>(s.kv_scale_elems()) +
                          sizeof(int32_t) * static_cast<double>(s.block_table_elems());
  const double q_bytes = s.quantized_q() ? static_cast<double>(s.q_elems()) + sizeof(float)
                                         : sizeof(float) * static_cast<double>(s.q_elems());
  const double tensors = static_cast<double>(s.q_elems() + s.o_elems());
  // dO as O, dQ as Q, dK as K, dV as V (a backward's K and V are contiguous fp32: validate()).
  const double grads = s.backward() ? tensors + static_cast<double>(s.kv_elems() + s.v_elems()) : 0;
  return q_bytes + sizeof(float) * (static_cast<double>(s.o_elems()) + grads + static_cast<double>(s.lse_elems())) +
         kv_bytes + static_cast<double>(workspace_of(s, kernel));
}

class CpuBackend final : public Backend {
 public:
  CpuBackend() : host_(read_host_info()) {}

  core::BackendKind kind() const override { return core::BackendKind::cpu; }

  core::DeviceInfo device_info() override {
    core::DeviceInfo d;
    d.name = "CPU: " + host_.cpu_model;
    d.sm_count = host_.threads;
    d.l2_bytes = host_.llc_bytes;
    d.memory_bytes = host_.mem_total_bytes;
    d.sm_clock_max_mhz = host_.max_mhz;
    return d;
  }

  core::Ceilings ceilings(bool remeasure) override {
    const std::string key = cpu_ceilings_key(host_);
    if (!remeasure) {
      if (ceilings_) return *ceilings_;
      if (auto cached = load_ceilings(key)) return *(ceilings_ = cached);
    }
    core::Ceilings c;
    c.source = "measured";
    const int64_t buffer_bytes = std::max(kMinStreamBufferBytes, 4 * llc_bytes());
    c.peak_bw_bytes_per_s = kernels::cpu::stream_bytes_per_s(static_cast<size_t>(buffer_bytes), kProbeRepeats);
    const double fp32_flops = kernels::cpu::fma_flops_per_s(kFmaSecondsPerRun, kProbeRepeats);
    // Every CPU kernel computes in fp32 whatever the dtype, so fp32 is the roof for all of them.
    for (const char* dtype : {"fp32", "fp16", "bf16", "fp8_e4m3"}) c.peak_flops_per_s[dtype] = fp32_flops;
    save_ceilings(key, c);
    ceilings_ = c;
    return c;
  }

  std::vector<const kernels::Kernel*> kernels() override { return kernels::registered(kernels::Backend::cpu); }

  core::Record measure(const core::Shape& shape, const kernels::Kernel& kernel,
                       const MeasureOptions& options) override;

 private:
  friend class CpuPoint;
  int64_t llc_bytes() const { return std::max(host_.llc_bytes, kAssumedMinLlcBytes); }

  // Allocated once per backend: faulting it in for every point would cost more than many points.
  std::vector<float>& flush_buffer() {
    if (flush_buffer_.empty()) flush_buffer_.assign(static_cast<size_t>(2 * llc_bytes() / sizeof(float)), 0.0f);
    return flush_buffer_;
  }

  HostInfo host_;
  std::optional<core::Ceilings> ceilings_;
  std::vector<float> flush_buffer_;  // 2x the LLC, written before every cold sample
};

// One point on the CPU: fp32 host tensors in the kernel's layout (K and V as the shape stores them:
// kernels/cpu/kv_cache.hpp), steady_clock timing through the shared sampling loop, no counters.
class CpuPoint final : public PointSteps {
 public:
  CpuPoint(CpuBackend& backend, const core::Shape& shape, const kernels::Kernel& kernel)
      : backend_(backend), s_(shape), kernel_(kernel), bshd_(kernel.layout() == kernels::Layout::bshd),
        q_map_(kernels::q_tensor_map(shape, bshd_)), o_map_(kernels::o_tensor_map(shape, bshd_)),
        kv_map_(kernels::kv_tensor_map(shape, bshd_)), v_map_(kernels::v_tensor_map(shape, bshd_)) {}

  std::string memory_refusal() override {
    const double need_bytes = std::max(core::footprint_bytes(s_, kernel_.kind()), cpu_footprint_bytes(s_, kernel_));
    const double avail_bytes = static_cast<double>(read_host_info().mem_available_bytes);
    if (avail_bytes > 0 && need_bytes > avail_bytes / 2)
      return fmt::format("needs {:.2f} GiB of host memory, more than half of the {:.2f} GiB available",
                         need_bytes / 1073741824.0, avail_bytes / 1073741824.0);
    return {};
  }

  uint64_t fresh_seed() override {
    std::random_device rd;
    const uint64_t now = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
    const uint64_t seed = kernels::splitmix64((uint64_t{rd()} << 32 | rd()) ^ now);
    return seed == 0 ? 1 : seed;
  }

  void allocate(uint64_t seed) override {
    if (s_.quantized_q()) {
      q_bytes_.emplace(s_.q_elems());
      q_scale_.emplace(1);
    } else {
      q_.emplace(s_.q_elems());
    }
    if (s_.quantized_kv()) {
      k_bytes_.emplace(s_.kv_buffer_elems());
      v_bytes_.emplace(s_.v_buffer_elems());
      k_scale_.emplace(s_.kv_scale_elems());
      v_scale_.emplace(s_.kv_scale_elems());
    } else {
      k_.emplace(s_.kv_buffer_elems());
      v_.emplace(s_.v_buffer_elems());
    }
    block_table_ = kernels::shuffled_block_table(s_, seed);  // empty when contiguous
    o_.emplace(s_.o_elems());
    lse_.emplace(s_.lse_elems());
    workspace_.emplace(static_cast<int64_t>((workspace_of(s_, kernel_) + sizeof(float) - 1) / sizeof(float)));
    workspace_->fill(0.0f);  // zero when first handed to the kernel, as on CUDA (Kernel::workspace_bytes)
    fill_inputs(seed);
    o_->fill(std::numeric_limits<float>::quiet_NaN());
    lse_->fill(std::numeric_limits<float>::quiet_NaN());
    if (s_.backward()) {
      // dO from tensor 3 (kernels/common/random.hpp), the gradients poisoned: an element the verified
      // call leaves unwritten fails the point.
      d_o_.emplace(s_.o_elems());
      fill_tensor(*d_o_, kTensorDO, o_map_, seed);
      dq_.emplace(s_.q_elems());
      dk_.emplace(s_.kv_elems());
      dv_.emplace(s_.v_elems());
      for (HostTensor* t : {&*dq_, &*dk_, &*dv_}) t->fill(std::numeric_limits<float>::quiet_NaN());
      if (!kernel_.writes_lse()) {
        // A kernel that writes no LSE (a Python callable): the float64 backward takes the float64
        // forward's, row by row from the same inputs, whatever layout the kernel takes them in.
        const core::Shape fwd = forward_of(s_);
        float* lse = lse_->data();
        kernels::parallel_for(s_.lse_elems(), 16, [&](int64_t lo, int64_t hi) {
          for (int64_t r = lo; r < hi; ++r) lse[r] = static_cast<float>(kernels::reference_row(fwd, seed, r).lse);
        });
      }
    }

    kernels::AttentionArgs args;
    args.shape = s_;
    if (s_.quantized_q()) {
      args.q = q_bytes_->data();
      args.q_scale = q_scale_->data();
    } else {
      args.q = q_->data();
    }
    if (s_.quantized_kv()) {
      args.k = k_bytes_->data();
      args.v = v_bytes_->data();
      args.k_scale = k_scale_->data();
      args.v_scale = v_scale_->data();
    } else {
      args.k = k_->data();
      args.v = v_->data();
    }
    args.block_table = block_table_.empty() ? nullptr : block_table_.data();
    args.o = o_->data();
    args.lse = lse_->data();
    args.workspace = workspace_->size() == 0 ? nullptr : workspace_->data();
    args.workspace_bytes = static_cast<size_t>(workspace_->size()) * sizeof(float);
    args.layout = kernel_.layout();
    cu_seqlens_.clear();
    for (int64_t start : s_.cu_seqlens()) cu_seqlens_.push_back(static_cast<int32_t>(start));  // validate(): < 2^31
    args.cu_seqlens = cu_seqlens_.empty() ? nullptr : cu_seqlens_.data();
    if (s_.pass == core::Pass::bwd) {
      // The kernel's own forward on the same buffers, which fills the O and LSE the backward reads.
      kernels::AttentionArgs forward_args = args;
      forward_args.shape = forward_of(s_);
      forward_call_ = kernel_.prepare(forward_args);
    }
    if (s_.backward()) {
      args.d_o = d_o_->data();
      args.dq = dq_->data();
      args.dk = dk_->data();
      args.dv = dv_->data();
    }
    // Untimed: a plugin's planning and allocation happen here.
    call_ = kernel_.prepare(args);
    zero_workspace_ = kernel_.needs_zeroed_workspace() && workspace_->size() > 0;
  }

  void call_forward() override {
    if (!forward_call_) throw std::logic_error("call_forward: not a bwd point");
    if (zero_workspace_) workspace_->fill(0.0f);
    forward_call_->launch();
    forward_call_->write_output();
  }

  void call_once() override {
    if (zero_workspace_) workspace_->fill(0.0f);
    call_->launch();
    call_->write_output();
  }

  core::Verification verify(uint64_t seed, int max_rows) override {
    // Poisoned (NaN) or non-finite O; LSE may legitimately be -inf (a row that sees no key).
    const bool check_lse = kernel_.writes_lse();
    int64_t unwritten = 0;
    for (int64_t e = 0; e < o_->size(); ++e) unwritten += !std::isfinite(o_->data()[e]);
    for (int64_t e = 0; check_lse && e < lse_->size(); ++e) {
      const float x = lse_->data()[e];
      unwritten += std::isnan(x) || x == std::numeric_limits<float>::infinity();
    }
    const auto rows = kernels::rows_to_check(s_, max_rows, seed);
    std::vector<float> o_rows, lse_rows;
    const int64_t dv = s_.value_hdim();
    o_rows.reserve(rows.size() * static_cast<size_t>(dv));
    for (int64_t r : rows) {
      const float* row = o_->data() + kernels::physical_row_offset(o_map_, r);
      o_rows.insert(o_rows.end(), row, row + dv);
      lse_rows.push_back(lse_->data()[r]);
    }
    core::Verification v = kernels::verify_rows(s_, seed, rows, o_rows, lse_rows, unwritten, 0, check_lse);
    if (s_.backward()) kernels::merge_grad_checks(v, verify_grads(seed, max_rows));
    return v;
  }

  PointTiming time(const MeasureOptions& options, const PointDeadline& deadline) override {
    std::vector<float>* flush = options.cold_l2 ? &backend_.flush_buffer() : nullptr;
    const bool staged = kernel_.stage_names(s_).size() > 1;
    StageClock stage_clock(kernel_.stage_names(s_).size());
    const SampleFn one_call = [&] {
      deadline.check();
      if (zero_workspace_) workspace_->fill(0.0f);
      if (flush) kernels::cpu::flush_caches(*flush);
      const auto start = Clock::now();
      call_->launch(staged ? &stage_clock : nullptr);
      std::vector<double> sample{std::chrono::duration<double, std::micro>(Clock::now() - start).count()};
      if (staged) {
        const auto stages = stage_clock.stage_us();
        sample.insert(sample.end(), stages.begin(), stages.end());
      }
      return sample;
    };
    PointTiming timing;
    timing.samples = sample_adaptively(one_call, options);
    timing.timing_mode = options.cold_l2 ? core::TimingMode::cold : core::TimingMode::warm;
    return timing;
  }

  void profile(const MeasureOptions&, core::Record& rec) override {
    rec.counters.status = core::CounterStatus::unavailable;
    rec.counters.reason = "CPU backend: no hardware counters";
  }

 private:
  static constexpr int kTensorQ = 0, kTensorDO = 3;  // kernels/common/random.hpp (K and V: kv_cache.hpp)

  // Each element of a tensor, in the kernel's layout, holds its canonical element's value.
  static void fill_tensor(HostTensor& t, int id, const kernels::TensorMap& map, uint64_t seed) {
    float* data = t.data();
    kernels::parallel_for(t.size(), 1 << 16, [&](int64_t lo, int64_t hi) {
      for (int64_t e = lo; e < hi; ++e)
        data[e] = kernels::input_value(seed, id, static_cast<uint64_t>(kernels::canonical_index(map, e)));
    });
  }
  void fill_inputs(uint64_t seed) {
    if (s_.quantized_q())
      kernels::cpu::fill_q(s_, seed, q_map_, q_bytes_->data(), q_scale_->data());
    else
      fill_tensor(*q_, kTensorQ, q_map_, seed);
    const int32_t* table = block_table_.empty() ? nullptr : block_table_.data();
    using kernels::cpu::KvTensor;
    if (s_.quantized_kv()) {
      kernels::cpu::fill_kv(s_, seed, KvTensor::k, kv_map_, table, k_bytes_->data(), k_scale_->data());
      kernels::cpu::fill_kv(s_, seed, KvTensor::v, v_map_, table, v_bytes_->data(), v_scale_->data());
    } else {
      kernels::cpu::fill_kv(s_, seed, KvTensor::k, kv_map_, table, k_->data(), nullptr);
      kernels::cpu::fill_kv(s_, seed, KvTensor::v, v_map_, table, v_->data(), nullptr);
    }
  }

  // `rows` rows of `width` values of tensor t (in the kernel's layout through `map`), canonical order.
  static std::vector<float> gather_rows(const HostTensor& t, const kernels::TensorMap& map,
                                        const std::vector<int64_t>& rows, int64_t width) {
    std::vector<float> out;
    out.reserve(rows.size() * static_cast<size_t>(width));
    for (int64_t r : rows) {
      const float* row = t.data() + kernels::physical_row_offset(map, r);
      out.insert(out.end(), row, row + width);
    }
    return out;
  }

  // dQ, dK and dV against the float64 backward from the O and LSE the backward read.
  core::Verification verify_grads(uint64_t seed, int max_rows) const {
    int64_t unwritten = 0;
    for (const HostTensor* t : {&*dq_, &*dk_, &*dv_})
      for (int64_t e = 0; e < t->size(); ++e) unwritten += !std::isfinite(t->data()[e]);
    const kernels::GradRows rows = kernels::grad_rows_to_check(s_, max_rows, seed);
    std::vector<int64_t> all_rows(static_cast<size_t>(s_.lse_elems()));
    for (int64_t r = 0; r < s_.lse_elems(); ++r) all_rows[static_cast<size_t>(r)] = r;
    const std::vector<float> o_all = gather_rows(*o_, o_map_, all_rows, s_.value_hdim());
    const std::vector<float> lse_all(lse_->data(), lse_->data() + lse_->size());
    return kernels::verify_grads(s_, seed, rows, o_all, lse_all, gather_rows(*dq_, q_map_, rows.q_rows, s_.hdim),
                                 gather_rows(*dk_, kv_map_, rows.kv_rows, s_.hdim),
                                 gather_rows(*dv_, v_map_, rows.kv_rows, s_.value_hdim()), unwritten);
  }

  CpuBackend& backend_;
  const core::Shape& s_;
  const kernels::Kernel& kernel_;
  bool bshd_;
  kernels::TensorMap q_map_, o_map_, kv_map_, v_map_;
  std::optional<HostTensor> q_, k_, v_, o_, lse_, workspace_;  // q_: unless fp8; k_ and v_: an unquantized cache's
  std::optional<HostBuffer<uint8_t>> q_bytes_;                 // fp8 prefill's Q (core/shape.hpp)
  std::optional<HostTensor> q_scale_;                          // and its one scale
  std::optional<HostBuffer<uint8_t>> k_bytes_, v_bytes_;      // a quantized cache's K and V,
  std::optional<HostTensor> k_scale_, v_scale_;               // and their scales
  std::vector<int32_t> block_table_;  // a paged cache's (kernels/common/paged.hpp), else empty
  std::optional<HostTensor> d_o_, dq_, dk_, dv_;  // a backward point's
  std::vector<int32_t> cu_seqlens_;  // a packed batch's, else empty
  std::unique_ptr<kernels::Call> call_;
  std::unique_ptr<kernels::Call> forward_call_;  // a bwd point's untimed forward
  bool zero_workspace_ = false;
};

core::Record CpuBackend::measure(const core::Shape& shape, const kernels::Kernel& kernel,
                                 const MeasureOptions& options) {
  CpuPoint point(*this, shape, kernel);
  return run_point(point, {core::BackendKind::cpu, 0}, shape, kernel, options);
}

}  // namespace

HostInfo read_host_info() {
  HostInfo h;
  h.cpu_model = proc_field("/proc/cpuinfo", "model name");
  if (h.cpu_model.empty()) h.cpu_model = proc_field("/proc/cpuinfo", "Model");  // Arm boards
  if (h.cpu_model.empty()) h.cpu_model = "unknown CPU";
  h.threads = kernels::hardware_threads();
  h.llc_bytes = llc_from_sysfs();
  if (h.llc_bytes == 0) h.llc_bytes = parse_size(proc_field("/proc/cpuinfo", "cache size"));
  h.mem_total_bytes = parse_size(proc_field("/proc/meminfo", "MemTotal"));
  h.mem_available_bytes = parse_size(proc_field("/proc/meminfo", "MemAvailable"));
  std::ifstream max_khz_file("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double max_khz = 0;
  if (max_khz_file >> max_khz && max_khz > 0)
    h.max_mhz = max_khz / 1000.0;
  else
    h.max_mhz = std::atof(proc_field("/proc/cpuinfo", "cpu MHz").c_str());
  return h;
}

std::string cpu_ceilings_key(const HostInfo& host) {
  // The thread count is part of the key: the probes run on every hardware thread.
  return device_cache_key(fmt::format("cpu {} t{}", host.cpu_model, host.threads));
}

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace attnprof::measure
