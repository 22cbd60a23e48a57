// The online softmax of both fused kernels keeps a lazy row max: a row's running max moves only when a
// new score exceeds it by more than this many log2 units after scaling, so P = exp2(scaled s - max)
// stays <= 2^8 (far inside fp16's range), and once the maxima settle a key tile needs one warp vote
// instead of the max's quad shuffles and the O rescale. Any max the lanes of a row share gives the same
// O and LSE. Host-visible for the tests.
#pragma once

namespace attnprof::kernels {

inline constexpr float kLazyMaxLog2 = 8.f;

}  // namespace attnprof::kernels
