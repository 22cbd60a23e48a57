#include "core/diagnosis_decode.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "core/decode_terms.hpp"
#include "core/text.hpp"

namespace attnprof::core {

namespace {

std::string bytes_text(double v) { return text::bytes(v); }
std::string us_text(double v) { return text::human(v); }

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string ceiling_name(const Record& r) { return r.backend == BackendKind::cpu ? "memory bandwidth" : "HBM"; }
std::string memory_name(const Record& r) { return r.backend == BackendKind::cpu ? "DRAM" : "HBM"; }

// "32 query heads share each of 8 KV heads", or "every query head has its own KV head".
std::string sharing_text(const Shape& s) {
  if (s.kv_heads <= 0 || s.heads == s.kv_heads) return "every query head has its own KV head now";
  return fmt::format("{} query heads share each of {} KV heads now", s.heads / s.kv_heads, s.kv_heads);
}

// What makes fewer bytes per generated token, of what the point does not do yet: an 8-bit cache for a
// 16-bit one; for a cache already at one byte per element, sharing KV heads or keeping fewer keys (a
// sliding window, or a narrower one than the point's).
std::string fewer_bytes_text(const Shape& s) {
  const std::string sharing = fmt::format("more query heads per KV head (GQA/MQA: {})", sharing_text(s));
  if (s.quantized_kv()) {
    const std::string fewer_keys = s.window > 0 ? fmt::format("a narrower sliding window (now {} keys)", s.window)
                                                : std::string("fewer keys kept (a sliding window)");
    return fmt::format("{}, or {}; the cache is already one byte per element ({})", sharing, fewer_keys,
                       to_string(s.kv_dtype));
  }
  return fmt::format("an fp8 KV cache (half the bytes of {}), {}", to_string(s.dtype), sharing);
}

}  // namespace

DecodeView decode_view(const Record& r, const DecodeInputs& in, DiagnosisMetrics& m) {
  DecodeView v;
  const Shape& s = r.shape;
  const int64_t tokens = generated_tokens(s);
  const double kv_bytes = kv_cache_bytes(s);
  m.decode = true;
  m.tokens_per_call = tokens;
  m.kv_cache_bytes = kv_bytes;
  if (tokens > 0 && in.min_bytes > 0) m.min_bytes_per_token = in.min_bytes / static_cast<double>(tokens);
  if (m.min_bytes_per_token && in.traffic_ratio && std::isfinite(*in.traffic_ratio))
    m.dram_bytes_per_token = *in.traffic_ratio * *m.min_bytes_per_token;
  const std::optional<CombineShare> combine = combine_share(r);
  if (combine) {
    m.combine_stage = combine->name;
    m.combine_time_share = combine->time_share;
  }
  if (const auto tile = kv_tile_keys(r)) m.kv_tile_keys = *tile;

  std::optional<double> rate, pct;
  if (in.p50_us > 0) rate = in.dram_bytes / (in.p50_us * 1e-6);
  if (rate && in.peak_bw_bytes_per_s > 0) pct = *rate / in.peak_bw_bytes_per_s * 100;
  if (pct && std::isfinite(*pct)) m.pct_of_hbm_ceiling = pct;

  std::string line = fmt::format("decode, {} generated token{} per call: streams {} ({})", tokens,
                                 tokens == 1 ? "" : "s",
                                 s.windowed() ? fmt::format("its {}-key window of the KV cache", s.window) : "the KV cache",
                                 bytes_text(kv_bytes));
  if (rate) {
    line += " at " + text::byte_rate(*rate, r.backend);
    if (pct)
      line += fmt::format(" = {:.0f}% of the {} {} ceiling", *pct, text::byte_rate(in.peak_bw_bytes_per_s, r.backend),
                          ceiling_name(r));
    if (!in.bytes_measured) line += " (the cost-model minimum over the P50: a lower bound)";
  }
  if (m.dram_bytes_per_token)
    line += fmt::format("; {} per generated token, {:.2f}x the minimum {}", bytes_text(*m.dram_bytes_per_token),
                        *in.traffic_ratio, bytes_text(*m.min_bytes_per_token));
  else if (m.min_bytes_per_token)
    line += fmt::format("; {} per generated token (the cost-model minimum)", bytes_text(*m.min_bytes_per_token));
  if (combine)
    line += fmt::format("; the combine stage ({}) takes {:.0f}% of the call", combine->name, combine->time_share * 100);
  v.evidence = line;

  // The short-call rule: a GPU's fixed cost per launch, against the time the ceiling needs for the bytes.
  if (r.backend == BackendKind::cpu || !(in.peak_bw_bytes_per_s > 0) || !(in.p50_us > 0) || !(in.min_bytes > 0)) return v;
  const bool latency_measured = in.launch_latency_us > 0;
  const double latency_us = latency_measured ? in.launch_latency_us : kDecodeAssumedLaunchLatencyUs;
  const int64_t launches = std::max<int64_t>(1, in.launches);
  const double stream_us = in.min_bytes / in.peak_bw_bytes_per_s * 1e6;
  const double limit_us = kDecodeShortCallLaunchLatencies * latency_us * static_cast<double>(launches);
  const double beyond_us = std::max(0.0, in.p50_us - stream_us);
  const double fixed_share = beyond_us / in.p50_us;
  m.hbm_stream_us = stream_us;
  m.short_call_limit_us = limit_us;
  m.fixed_time_share = fixed_share;
  v.short_stream = stream_us < limit_us;
  if (!v.short_stream) return v;
  // Fixed cost is at most the limit too: time beyond it is the kernel's own work (a serial key loop,
  // padded MMAs), which the usual rules judge.
  const bool beyond_is_fixed = beyond_us <= limit_us;
  v.short_call = fixed_share >= kDecodeFixedTimeShareFrom && beyond_is_fixed;

  std::string why = fmt::format(
      "the {} ceiling streams the call's minimum {} in {} us, under {:g}x its {} kernel launch{} x {} us launch "
      "latency{} = {} us",
      ceiling_name(r), bytes_text(in.min_bytes), us_text(stream_us), kDecodeShortCallLaunchLatencies, launches,
      launches == 1 ? "" : "es", us_text(latency_us),
      latency_measured ? "" : " (assumed: the results have no context.ceilings.launch_latency_us)", us_text(limit_us));
  if (v.short_call) {
    const std::string combine_text =
        combine ? fmt::format(", the split-combine launch ({} of the call)", fmt::format("{:.0f}%", combine->time_share * 100))
                : std::string();
    why += fmt::format(
        ": the call is too short for its bytes; {:.0f}% of its {} us P50 (at least {:.0f}%) is fixed cost beyond the "
        "stream: the launch{}, the pipeline's ramp to bandwidth, the drain{}",
        fixed_share * 100, us_text(in.p50_us), kDecodeFixedTimeShareFrom * 100, launches == 1 ? "" : "es", combine_text);
  } else if (!beyond_is_fixed) {
    why += fmt::format(", but the {} us of its {} us P50 beyond the stream is more than that limit: not fixed cost, the "
                       "kernel's own work",
                       us_text(beyond_us), us_text(in.p50_us));
  } else {
    why += fmt::format(", but only {:.0f}% of its {} us P50 is beyond the stream (under {:.0f}%): short, yet streaming",
                       fixed_share * 100, us_text(in.p50_us), kDecodeFixedTimeShareFrom * 100);
  }
  v.short_call_evidence = why;
  if (!v.short_call) return v;

  std::vector<std::string> steps;
  if (launches > 1) {
    const auto splits = r.plan.find("kv_splits");
    steps.push_back(fmt::format(
        "one launch instead of {}: the combine folded into the split kernel (the last CTA of each row merging the "
        "partials), or fewer KV splits{} where the grid stays full",
        launches, splits != r.plan.end() ? fmt::format(" (now {})", splits->second) : std::string()));
  }
  steps.push_back(fmt::format(
      "batch more sequences per call: the fixed cost stays while the bytes grow (batch {} streams {} of KV cache; "
      "16x the sequences stream 16x that)",
      s.batch, bytes_text(kv_bytes)));
  if (!in.host_bound) steps.push_back("replay the decode step from a CUDA graph, which removes the gaps between its launches");
  v.short_call_next_step = "fixed cost, not bandwidth, limits this call: " + joined(steps);
  return v;
}

std::string decode_memory_next_step(const Record& r, const DecodeInputs& in, const DiagnosisMetrics& m) {
  const Shape& s = r.shape;
  std::vector<std::string> steps;
  if (m.pct_of_hbm_ceiling) {
    const double pct = *m.pct_of_hbm_ceiling;
    if (pct >= kDecodeAtRoofPct)
      steps.push_back(fmt::format(
          "{} at {:.0f}% of the {} ceiling: the kernel is at the roof, only fewer bytes per token help: {}",
          memory_name(r), pct, text::byte_rate(in.peak_bw_bytes_per_s, r.backend), fewer_bytes_text(s)));
    else if (pct >= kSolSaturatedPct && m.fixed_time_share && m.hbm_stream_us)
      steps.push_back(fmt::format(
          "{} at {:.0f}% of the {} ceiling: near the roof, not at it (streaming decode reaches {:.0f}% and more): "
          "{:.0f}% of the {} us P50 is beyond streaming the call's bytes at the ceiling ({} us), work the stream does "
          "not hide (the Q load, the pipeline's fill, a split-KV kernel's partials and their combine{}){}; sample "
          "the warp states (sweep --stalls) to see which, then fewer bytes per token: {}",
          memory_name(r), pct, text::byte_rate(in.peak_bw_bytes_per_s, r.backend), kDecodeAtRoofPct,
          *m.fixed_time_share * 100, us_text(in.p50_us), us_text(*m.hbm_stream_us),
          s.quantized_kv() ? ", the dequantization" : "",
          r.clock.throttled_samples > 0 ? ", or the clock, throttled during sampling (the throttled flag)" : "",
          fewer_bytes_text(s)));
    else
      steps.push_back(fmt::format(
          "{} at {:.0f}% of the {} ceiling: more K/V bytes in flight per SM (a deeper cp.async/TMA pipeline, more "
          "CTAs resident) to reach the roof, then fewer bytes per token: {}",
          memory_name(r), pct, text::byte_rate(in.peak_bw_bytes_per_s, r.backend), fewer_bytes_text(s)));
  } else {
    steps.push_back("fewer bytes per token: " + fewer_bytes_text(s));
  }
  if (in.read_factor && *in.read_factor > kDecodeReadFactorAbove)
    steps.push_back(fmt::format(
        "the call reads {:.2f}x its minimum bytes read (over {:.2f}x): the KV cache is read more than once; check that "
        "each KV head is read once for its whole GQA group ({} query heads), not once per query head, that the "
        "splits' key ranges do not overlap, and the block table's gathers",
        *in.read_factor, kDecodeReadFactorAbove, s.kv_heads > 0 ? s.heads / s.kv_heads : s.heads));
  if (s.paged() && m.kv_tile_keys && s.page_size < *m.kv_tile_keys) {
    const int64_t pages_per_tile = (*m.kv_tile_keys + s.page_size - 1) / s.page_size;
    steps.push_back(fmt::format(
        "pages of {} keys are smaller than the kernel's {}-key K/V tile: each tile gathers {} pages through the "
        "block table; pages of {} keys or more (or a tile of one page) read the cache in whole tiles",
        s.page_size, *m.kv_tile_keys, pages_per_tile, *m.kv_tile_keys));
  }
  return joined(steps);
}

std::string decode_compute_next_step(const Record& r, std::optional<double> flops_vs_cost) {
  if (!flops_vs_cost || *flops_vs_cost <= kDecodePaddedFlopsAbove) return {};
  return fmt::format(
      "the tensor cores do {:.0f}x the FLOPs the {} query row{} per head need: query tiles padded around them; a "
      "decode kernel (the query heads of a GQA group packed into the MMA rows, the keys split across CTAs) does the "
      "work with a fraction of the MMAs and is then bound by the KV stream",
      *flops_vs_cost, r.shape.seq_q, r.shape.seq_q == 1 ? "" : "s");
}

}  // namespace attnprof::core
