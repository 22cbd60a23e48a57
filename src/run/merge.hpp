// Merging the results of the shards of one sweep (attnprof merge): the inputs must come from the same
// sweep (spec text, preset, kernels) on the same device model and backend; together they must cover
// every point of the sweep exactly once unless told otherwise.
#pragma once
#include <string>
#include <vector>

#include "core/results.hpp"

namespace attnprof::run {

struct MergeOptions {
  bool allow_duplicates = false;  // a point in several inputs: keep the first
  bool allow_partial = false;     // points of the sweep missing from every input
};

struct MergeInput {
  std::string name;  // file name, for messages
  core::Results results;
};

// The keys of every point of the sweep a results file came from, in sweep order, recomputed from its
// context (preset or axes text and kernel list); empty when the sweep cannot be recomputed (a shape
// list from a file), in which case only the point count is checked.
std::vector<std::string> expected_keys(const core::Context&);

// Throws InputError with a one-line message on mismatched sweeps, devices or backends, duplicate
// points, or gaps (unless allowed). Records come out in sweep order.
core::Results merge_results(const std::vector<MergeInput>& inputs, const MergeOptions&);

}  // namespace attnprof::run
