// Turning run-time choices into the compile-time arguments of a kernel template: an element type tag
// (__half or __nv_bfloat16) for a dtype, and std::integral_constant<decltype(v), v> for one of a fixed
// set of values (head dims, tile widths, enumerators). Callers' unsupported_reason() refuses anything
// else first.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "core/shape.hpp"

namespace attnprof::kernels {

// fn(__nv_bfloat16{}) for bf16, fn(__half{}) for fp16.
template <typename Fn>
void dispatch_dtype(core::DType dtype, Fn&& fn) {
  if (dtype == core::DType::bf16) fn(__nv_bfloat16{});
  else fn(__half{});
}

// fn(std::integral_constant<decltype(v), v>) for the v of kValues that equals value; nothing when none
// does.
template <auto... kValues, typename T, typename Fn>
void dispatch_value(T value, Fn&& fn) {
  (void)((value == kValues ? (fn(std::integral_constant<decltype(kValues), kValues>{}), true) : false) || ...);
}

// fn(element type tag, std::integral_constant<int, hdim>) for kernels instantiated at hdim 64 and 128.
template <typename Fn>
void dispatch_dtype_hdim(const core::Shape& s, Fn&& fn) {
  dispatch_dtype(s.dtype, [&](auto tag) { dispatch_value<64, 128>(s.hdim, [&](auto hdim) { fn(tag, hdim); }); });
}

}  // namespace attnprof::kernels
