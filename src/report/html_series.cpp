#include "report/html_series.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/decode_terms.hpp"
#include "core/errors.hpp"
#include "core/strings.hpp"
#include "core/sweep_spec.hpp"

namespace attnprof::report::detail {

namespace {

// Fields a variant can name, each with the text of its value (never empty, so that a line's name is
// the same whichever fields the others vary).
enum Slot { kBatch, kHeads, kSeqQ, kSeqK, kHdimV, kWindow, kPages, kSplits, kLengths, kKv, kSlots };
constexpr std::array<std::string_view, kSlots> kSlotNames = {
    "batch", "heads", "seq_q", "keys", "value hdim", "window", "KV layout", "KV splits", "lengths", "KV dtype"};
using SlotValues = std::array<std::string, kSlots>;

struct Ties {
  bool tokens = false;  // batch = tokens / seq_q
  bool dim = false;     // heads = dim / hdim
};

// Per record, the ties of the sweep-spec product that made its shape (Context::sweep "spec", the
// axes string as run: a preset's expansion included). A record no product of the spec makes (a
// sweep file of shapes, a merged run) has none.
std::vector<Ties> ties_of(const core::Results& results) {
  std::vector<Ties> out(results.records.size());
  const auto& sweep = results.context.sweep;
  if (!sweep.is_object() || !sweep.contains("spec") || !sweep["spec"].is_string()) return out;
  const auto spec = sweep["spec"].get<std::string>();
  std::map<std::string, Ties> by_label;
  for (const std::string_view product : core::split(spec, '|')) {
    Ties t;
    for (const std::string_view axis : core::split(product, ';')) {
      const std::string_view name = core::trim(axis.substr(0, axis.find('=')));
      t.tokens = t.tokens || name == "tokens";
      t.dim = t.dim || name == "dim";
    }
    if (!t.tokens && !t.dim) continue;
    core::SweepSpec parsed;
    try {
      parsed = core::parse_axes(product);
    } catch (const InputError&) {
      continue;  // not an axes string: no ties known
    }
    for (const auto& shape : parsed.shapes) by_label.emplace(shape.label(), t);
  }
  for (size_t i = 0; i < results.records.size(); ++i) {
    const auto found = by_label.find(results.records[i].shape.label());
    if (found != by_label.end()) out[i] = found->second;
  }
  return out;
}

SlotValues slot_values(const core::Shape& s, Ties t, std::string_view x) {
  SlotValues v;
  v[kBatch] = t.tokens ? fmt::format("tokens {}", s.tokens_q()) : fmt::format("b{}", s.batch);
  if (!t.dim)
    v[kHeads] = fmt::format("h{}/{}", s.heads, s.kv_heads);
  else
    v[kHeads] = s.kv_heads == s.heads ? fmt::format("dim {}", s.heads * s.hdim)
                                      : fmt::format("dim {} kv {}", s.heads * s.hdim, s.kv_heads);
  v[kSeqQ] = fmt::format("seq_q {}", s.seq_q);
  v[kSeqK] = s.seq_k == s.seq_q ? std::string("keys = queries") : fmt::format("keys {}", s.seq_k);
  v[kHdimV] = fmt::format("value hdim {}", s.value_hdim());
  v[kWindow] = s.windowed() ? fmt::format("window {}", s.window) : std::string("no window");
  v[kPages] = s.paged() ? fmt::format("pages of {}", s.page_size) : std::string("contiguous");
  v[kSplits] = s.kv_splits > 0 ? fmt::format("{} splits", s.kv_splits) : std::string("splits auto");
  v[kLengths] = s.varlen() ? fmt::format("{} seed {}", s.lengths.empty() ? "list" : s.lengths, s.lengths_seed)
                           : std::string("dense");
  v[kKv] = s.quantized_kv() ? fmt::format("KV {}/{}", core::to_string(s.kv_dtype), core::to_string(s.kv_scale))
                            : fmt::format("KV {}", core::to_string(s.dtype));
  // The x axis' own field is no variant (nor, on a keys axis, seq_k's relation to seq_q).
  if (x == "batch") v[kBatch].clear();
  if (x == "heads") v[kHeads].clear();
  if (x == "seq_q") v[kSeqQ].clear();
  if (x == "seq_k") v[kSeqK].clear();
  return v;
}

int64_t field_of(const core::Shape& s, std::string_view field) {
  if (field == "seq_q") return s.seq_q;
  if (field == "seq_k") return s.seq_k;
  if (field == "batch") return s.batch;
  if (field == "heads") return s.heads;
  return s.hdim;
}

std::string x_title_of(std::string_view field) {
  if (field == "seq_q") return "sequence length (queries)";
  if (field == "seq_k") return "keys per sequence";
  if (field == "hdim") return "head dimension";
  return std::string(field);
}

// One chart over the records `members` (indices into records): its x axis, panels and variants.
SeriesChart chart_of(std::string id, const core::Results& results, const std::vector<size_t>& members,
                     const std::vector<Ties>& ties, std::vector<SeriesPlace>& places, int chart_index) {
  const auto shape = [&](size_t i) -> const core::Shape& { return results.records[i].shape; };
  // The x axis: the first of these fields that takes more than one value.
  const std::vector<std::string> candidates = id == "decode"
      ? std::vector<std::string>{"seq_k", "batch", "heads", "seq_q", "hdim"}
      : std::vector<std::string>{"seq_q", "seq_k", "batch", "heads", "hdim"};
  std::string x = candidates.front();
  for (const auto& field : candidates) {
    std::set<int64_t> values;
    for (size_t i : members) values.insert(field_of(shape(i), field));
    if (values.size() > 1) {
      x = field;
      break;
    }
  }
  std::vector<SlotValues> values;
  for (size_t i : members) values.push_back(slot_values(shape(i), ties[i], x));

  // Panels: dtype, hdim (unless it is the x axis), mask, the pass where a backward point is among
  // the members (a backward's time is not a forward's), then the fields moved out of the variants.
  const bool passes = std::any_of(members.begin(), members.end(), [&](size_t i) { return shape(i).backward(); });
  std::vector<int> moved;
  auto panel_of = [&](size_t m) {
    const core::Shape& s = shape(members[m]);
    std::string name = std::string(core::to_string(s.dtype));
    if (x != "hdim") name += fmt::format(" \u00b7 hdim {}", s.hdim);
    name += s.causal ? " \u00b7 causal" : " \u00b7 not causal";
    if (passes) name += fmt::format(" \u00b7 {}", core::to_string(s.pass));
    for (int slot : moved) name += " \u00b7 " + values[m][slot];
    return name;
  };
  // A field is a variant field where two points of one kernel at one x in one panel differ in it.
  std::vector<int> variant_slots;
  for (;;) {
    variant_slots.clear();
    std::map<std::tuple<std::string, std::string, int64_t>, std::vector<size_t>> at_x;
    for (size_t m = 0; m < members.size(); ++m)
      at_x[{panel_of(m), results.records[members[m]].kernel, field_of(shape(members[m]), x)}].push_back(m);
    for (int slot = 0; slot < kSlots; ++slot) {
      if (std::find(moved.begin(), moved.end(), slot) != moved.end()) continue;
      const bool varies = std::any_of(at_x.begin(), at_x.end(), [&](const auto& group) {
        const auto& ms = group.second;
        return std::any_of(ms.begin(), ms.end(), [&](size_t m) { return values[m][slot] != values[ms[0]][slot]; });
      });
      if (varies) variant_slots.push_back(slot);
    }
    std::set<std::string> names;
    for (size_t m = 0; m < members.size(); ++m) {
      std::string name;
      for (int slot : variant_slots) name += (name.empty() ? "" : " \u00b7 ") + values[m][slot];
      names.insert(name);
    }
    if (names.size() <= kMaxSeriesVariants || variant_slots.empty()) break;
    moved.push_back(variant_slots.front());
  }

  SeriesChart chart;
  chart.id = std::move(id);
  chart.x_field = x;
  chart.x_title = x_title_of(x);
  for (int slot : variant_slots)
    chart.variant_title += (chart.variant_title.empty() ? "" : ", ") + std::string(kSlotNames[slot]);
  // Panels in reading order: dtype, then hdim by value, then the mask; the moved fields as first seen.
  std::vector<std::tuple<std::string, int64_t, bool, size_t, std::string>> panels;
  for (size_t m = 0; m < members.size(); ++m) {
    const std::string name = panel_of(m);
    if (std::any_of(panels.begin(), panels.end(), [&](const auto& p) { return std::get<4>(p) == name; })) continue;
    const core::Shape& s = shape(members[m]);
    panels.emplace_back(std::string(core::to_string(s.dtype)), x == "hdim" ? 0 : s.hdim, s.causal, panels.size(), name);
  }
  std::sort(panels.begin(), panels.end());
  for (const auto& p : panels) chart.panels.push_back(std::get<4>(p));
  for (size_t m = 0; m < members.size(); ++m) {
    std::string variant;
    for (int slot : variant_slots) variant += (variant.empty() ? "" : " \u00b7 ") + values[m][slot];
    auto at = std::find(chart.variants.begin(), chart.variants.end(), variant);
    if (at == chart.variants.end()) at = chart.variants.insert(at, variant);
    SeriesPlace& place = places[members[m]];
    place.chart = chart_index;
    place.panel = static_cast<int>(std::find(chart.panels.begin(), chart.panels.end(), panel_of(m)) - chart.panels.begin());
    place.variant = static_cast<int>(at - chart.variants.begin());
  }
  return chart;
}

}  // namespace

SeriesLayout series_layout(const core::Results& results, const std::vector<Row>& rows) {
  SeriesLayout layout;
  layout.places.resize(rows.size());
  const std::vector<Ties> ties = ties_of(results);
  std::vector<size_t> prefill, decode;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].status != "ok") continue;
    (core::is_decode(results.records[i].shape) ? decode : prefill).push_back(i);
  }
  for (auto [id, members] : {std::pair{"prefill", &prefill}, std::pair{"decode", &decode}}) {
    if (members->empty()) continue;
    layout.charts.push_back(chart_of(id, results, *members, ties, layout.places, static_cast<int>(layout.charts.size())));
  }
  return layout;
}

bool own_kernel(const core::Context& ctx, std::string_view kernel) {
  if (kernel.find(':') != std::string_view::npos) return false;  // torch:flash, py:module:function
  if (!ctx.plugins.is_array()) return true;
  for (const auto& plugin : ctx.plugins) {
    if (!plugin.is_object() || !plugin.contains("kernels") || !plugin["kernels"].is_array()) continue;
    for (const auto& k : plugin["kernels"])
      if (k.is_string() && k.get<std::string>() == kernel) return false;
  }
  return true;
}

}  // namespace attnprof::report::detail
