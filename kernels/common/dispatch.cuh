// Turning a shape's run-time dtype and head dimension into the compile-time arguments of a kernel
// template: fn(element type tag, std::integral_constant<int, hdim>). For kernels that instantiate
// hdim 64 and 128 and fp16/bf16 only (their unsupported_reason() refuses the rest first).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "core/shape.hpp"

namespace attnprof::kernels {

template <typename Fn>
void dispatch_dtype_hdim(const core::Shape& s, Fn&& fn) {
  auto by_hdim = [&](auto tag) {
    if (s.hdim == 64) fn(tag, std::integral_constant<int, 64>{});
    else fn(tag, std::integral_constant<int, 128>{});
  };
  if (s.dtype == core::DType::bf16) by_hdim(__nv_bfloat16{});
  else by_hdim(__half{});
}

}  // namespace attnprof::kernels
