// Times the CUDA kernels at the FlashAttention benchmark shapes (batch * seq = 16384 tokens, model dim
// 2048, heads = 2048 / hdim; FLOPs 4*B*H*N*N*D, halved when causal) with CUDA events: warm-up calls,
// then the median of --iters timed calls. The inputs (3 x 64 MiB at 16384 tokens) exceed the 60 MiB
// L2, so K and V stream from HBM. Each point is verified once against float64 first.
// Usage: bench_gpu_kernels [--iters N] [--kernels reference,fused] [--variants fast,small,warps8]
//                          [--seqs 512,1024,...] [--hdims 64,128] [--dtypes bf16,fp16]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "core/shape.hpp"
#include "kernels/common/testbed.hpp"
#include "kernels/registry.hpp"

namespace {

using attnprof::core::DType;
using attnprof::core::Shape;
namespace kernels = attnprof::kernels;

constexpr int64_t kTokens = 16384;
constexpr int64_t kModelDim = 2048;
constexpr int kWarmupCalls = 5;
constexpr uint64_t kSeed = 12345;

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

double median_ms(const kernels::Kernel& kernel, const kernels::AttentionArgs& args, int iters,
                 cudaStream_t stream) {
  for (int i = 0; i < kWarmupCalls; ++i) kernel.launch(args);
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> times_ms;
  for (int i = 0; i < iters; ++i) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    kernel.launch(args);
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times_ms.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times_ms.begin(), times_ms.end());
  return times_ms[times_ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 30;
  std::vector<std::string> kernel_names{"reference", "fused"}, variants{"fast"};
  std::vector<std::string> seqs{"512", "1024", "2048", "4096", "8192", "16384"}, hdims{"64", "128"};
  std::vector<std::string> dtypes{"bf16"};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--iters") iters = std::max(1, std::atoi(value.c_str()));
    else if (flag == "--kernels") kernel_names = split(value);
    else if (flag == "--variants") variants = split(value);
    else if (flag == "--seqs") seqs = split(value);
    else if (flag == "--hdims") hdims = split(value);
    else if (flag == "--dtypes") dtypes = split(value);
    else {
      std::fprintf(stderr, "unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench_gpu_kernels: no CUDA device\n");
    return 77;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("device %s, %d SMs; median of %d calls after %d warm-up calls\n", prop.name,
              prop.multiProcessorCount, iters, kWarmupCalls);
  std::printf("%-10s %-7s %-42s %10s %9s %s\n", "kernel", "tiles", "shape", "median_ms", "TFLOP/s",
              "verified");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");

  for (const std::string& dtype_text : dtypes)
    for (const std::string& hdim_text : hdims)
      for (bool causal : {false, true})
        for (const std::string& seq_text : seqs) {
          Shape s;
          s.hdim = std::atoll(hdim_text.c_str());
          s.seq_q = s.seq_k = std::atoll(seq_text.c_str());
          s.batch = std::max<int64_t>(1, kTokens / s.seq_q);
          s.heads = s.kv_heads = kModelDim / s.hdim;
          s.causal = causal;
          s.dtype = attnprof::core::parse_dtype(dtype_text);
          const double flops = 4.0 * s.batch * s.heads * s.seq_q * s.seq_k * s.hdim / (causal ? 2 : 1);
          for (const std::string& name : kernel_names) {
            const kernels::Kernel* kernel = kernels::find(kernels::Backend::cuda, name);
            if (!kernel) {
              std::fprintf(stderr, "no kernel %s\n", name.c_str());
              return 2;
            }
            for (const std::string& variant : name == "fused" ? variants : std::vector<std::string>{"-"}) {
              if (name == "fused") setenv("ATTNPROF_FUSED_CONFIG", variant.c_str(), 1);
              if (const std::string why = kernel->unsupported_reason(s); !why.empty()) {
                std::printf("%-10s %-7s %-42s unsupported: %s\n", name.c_str(), variant.c_str(),
                            s.label().c_str(), why.c_str());
                continue;
              }
              try {
                kernels::CudaProblem problem(s, kernel->workspace_bytes(s));
                problem.fill_inputs(kSeed, stream);
                problem.poison_outputs(stream);
                const kernels::AttentionArgs args = problem.args(stream);
                kernel->launch(args);
                const auto v = problem.verify(kSeed, 16, stream);
                const double ms = median_ms(*kernel, args, iters, stream);
                std::printf("%-10s %-7s %-42s %10.3f %9.1f %s (err %.2g tol %.2g)\n", name.c_str(),
                            variant.c_str(), s.label().c_str(), ms, flops / (ms * 1e-3) / 1e12,
                            v.passed ? "ok" : "FAILED", v.o_max_abs_err, v.tolerance);
              } catch (const kernels::DeviceOutOfMemory& e) {
                std::printf("%-10s %-7s %-42s oom: %s\n", name.c_str(), variant.c_str(),
                            s.label().c_str(), e.what());
              }
              std::fflush(stdout);
            }
          }
        }
  cudaStreamDestroy(stream);
  return 0;
}
