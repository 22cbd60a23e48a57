// The marker kernels of a batched counter session (src/measure/counter_batch.hpp): launched before a
// point's call when no L2 flush begins it (warm mode), and after the last call of a pass (or after
// each call, warm), each is one auto range that CUPTI counts as kBeginMarkerWarps or kEndMarkerWarps
// launched warps, which is how the session's ranges are cut back into each point's ranges. They touch
// no memory, so they perturb no counter of the point.
#pragma once
#include <cuda_runtime_api.h>

namespace attnprof::measure {

enum class RangeMarker { begin, end };

// Enqueues the marker on `stream`; throws like check_cuda when the launch fails.
void launch_range_marker(RangeMarker, cudaStream_t stream);

}  // namespace attnprof::measure
