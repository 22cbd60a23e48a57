// The measurement backends, one enum for the whole tree: the kernels' registry files a kernel under one
// (kernels::Kernel::backend()), a results file names the one that measured (Context::backend,
// Record::backend), and the command line chooses among them (--backend auto|cuda|cpu).
#pragma once
#include <array>
#include <string_view>

namespace attnprof::core {

// "cuda", "cpu"; none ("") where a results file names none.
enum class BackendKind { none, cuda, cpu };
std::string_view to_string(BackendKind);  // core/results.cpp

// The choices of --backend: "auto" opens CUDA when a GPU is present, else the CPU backend.
inline constexpr std::array<std::string_view, 3> kBackendChoices = {"auto", "cuda", "cpu"};
// Throws InputError "unknown backend 'x' (expected auto, cuda or cpu)" for anything else.
void check_backend_choice(std::string_view);  // core/results.cpp

}  // namespace attnprof::core
