// Probe kernels with known work: the ceilings (ceilings.cu) and attnprof calibrate (calibrate.cpp)
// run them. Each launcher enqueues exactly one launch on `stream` and never synchronises, so a probe
// is timed, replayed from a graph and profiled like any attention call. Byte and FLOP counts per
// launch are the callers' (they are the analytic cost each probe must do).
#pragma once
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace attnprof::measure::probes {

inline constexpr int kMmaChains = 8;                 // independent accumulators per warp
inline constexpr double kFlopsPerMma = 2.0 * 16 * 8 * 16;  // m16n8k16, per warp
inline constexpr int kFmaChains = 8;                 // independent FMA chains per thread
// The register-heavy probe: values each thread keeps live (one FMA each per load), and its block.
inline constexpr int kRegisterHeavyLive = 160;
inline constexpr int kRegisterHeavyThreads = 256;

// Reads `bytes` (a multiple of 64) once, 16 bytes per load, four loads in flight per thread, L1
// bypassed; `passes` > 1 reads it that many times (an L2-resident buffer: the L2 bandwidth). The
// XOR of what was read goes to sink[0] only if it equals an impossible value, so nothing is written.
void launch_read(const void* src, size_t bytes, int passes, uint32_t* sink, int blocks, int threads, cudaStream_t stream);
// Shared-memory stages of the bulk read probe.
inline constexpr int kBulkStages = 4;
// Reads `bytes` `passes` times with cp.async.bulk (Hopper's bulk copy, sm_90+; an older build runs an
// empty kernel) in chunks of chunk_bytes (a multiple of 16; kBulkStages of them must fit in shared
// memory), one issuing thread per block. Returns the bytes one pass reads (whole chunks).
size_t launch_read_bulk(const void* src, size_t bytes, int passes, uint32_t chunk_bytes, int blocks,
                        cudaStream_t stream);
// Copies `bytes` (a multiple of 16) from src to dst, `passes` times, 16 bytes per thread and step;
// passes > 1 bypasses L1 (an L2-resident pair of buffers).
void launch_copy(const void* src, void* dst, size_t bytes, int passes, int blocks, int threads, cudaStream_t stream);
// Writes `bytes` (a multiple of 16) of zeros, 16 bytes per store.
void launch_fill(void* dst, size_t bytes, int blocks, int threads, cudaStream_t stream);
// Per warp: iterations x kMmaChains independent mma.sync m16n8k16 (fp32 accumulate), bf16 or fp16
// operands; out has one float per thread. Needs sm_80+ code (an older build runs an empty loop).
void launch_mma(bool bf16, float* out, int iterations, int blocks, int threads, cudaStream_t stream);
// Per thread: iterations x kFmaChains FP32 FMAs in independent chains; out has one float per thread.
void launch_fma(float* out, int iterations, int blocks, int threads, cudaStream_t stream);
// One block of one thread that does nothing.
void launch_empty(cudaStream_t stream);
// next[i] = (a i + c) mod n for n a power of two: one cycle through every element (Hull-Dobell:
// c odd, a = 1 mod 4), each step a jump far across the buffer.
void launch_chase_init(uint32_t* next, size_t n, cudaStream_t stream);
// Each thread follows `steps` dependent loads of next[] from its own start; out has one uint32 per
// thread.
void launch_chase(const uint32_t* next, size_t n, int steps, uint32_t* out, int blocks, int threads,
                  cudaStream_t stream);
// Blocks of kRegisterHeavyThreads threads, each keeping kRegisterHeavyLive floats live in registers
// (so one block fills an SM's register file): per iteration each warp loads one hashed 128-byte line
// of src[0, n) (n a power of two, at least 32), a word per lane, then one FMA on every live value. out
// has one float per thread.
void launch_register_heavy(const float* src, size_t n, int iterations, float* out, int blocks, cudaStream_t stream);

// The kernels' functions, for the occupancy API (kernels::LaunchInfo::func).
enum class Kernel { read, copy, fill, mma_bf16, mma_fp16, fma, empty, chase, register_heavy };
const void* function_of(Kernel);

}  // namespace attnprof::measure::probes
