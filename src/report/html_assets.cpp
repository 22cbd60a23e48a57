#include "report/html_assets.hpp"

namespace attnprof::report::detail {

std::string_view report_css() {
  return R"CSS(
:root { --fg: #1d2125; --muted: #5c6670; --line: #d5dae0; --bg: #ffffff; --alt: #f5f7f9;
        --bad: #b00020; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; max-width: 1240px; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 8px 0 2px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 14px; margin: 14px 0 4px; }
.sub, .note { color: var(--muted); }
a { color: #1a5fb4; }
dl.context { display: grid; grid-template-columns: minmax(8em, max-content) minmax(0, 1fr); gap: 2px 16px;
             margin: 0; }
dl.context dt { color: var(--muted); }
dl.context dd { margin: 0; overflow-wrap: anywhere; }
ul.notices li { color: #7a4d00; }
/* A wide table scrolls inside its own box; the page itself never scrolls sideways. */
.table-wrap { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; }
td.n { white-space: nowrap; }
td:first-child { white-space: nowrap; }
/* Short words (kernel names, verdicts, column names) stay on one line; only the flags and reasons wrap,
   a reason to two lines (its tooltip and "Points not ok" have all of it). */
#points-table td, #points-table th { white-space: nowrap; }
#points-table th { vertical-align: bottom; }
#points-table td.flags { white-space: normal; min-width: 18em; }
#points-table .flag { white-space: nowrap; }
/* A memory-bound verdict's level, "(L1/shared)", may take a second line; the verdict itself does not wrap. */
#points-table td.verdict { white-space: normal; }
#points-table a.verdict, #points-table span.level { white-space: nowrap; }
/* Two lines at most, all of it in the tooltip: a reason, a demangled kernel name (a library's templates
   run to hundreds of characters). */
#points-table .reason, .kname { display: -webkit-box; -webkit-line-clamp: 2; -webkit-box-orient: vertical;
                                overflow: hidden; }
#points-table .reason { min-width: 14em; max-width: 36em; color: var(--muted); font-size: 12px; }
.kname { overflow-wrap: anywhere; max-width: 48em; }
tbody tr:nth-child(even) { background: var(--alt); }
nav#toc { display: flex; flex-wrap: wrap; gap: 2px 16px; margin: 6px 0 4px; font-size: 13px; }
nav#toc b { color: var(--muted); font-weight: 600; }
#not-ok details.points { display: inline; border: none; margin: 0 0 0 6px; padding: 0; font-size: 13px; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort="ascending"]::after { content: " \25B2"; }
table.sortable th[aria-sort="descending"]::after { content: " \25BC"; }
#comparison-table tbody, #why-table tbody { border-bottom: 1px solid var(--line); }
#comparison-table tbody tr, #why-table tbody tr { background: none; }
#comparison-table tbody:nth-of-type(even), #why-table tbody:nth-of-type(even) { background: var(--alt); }
#comparison-table tr.summary td, #why-table tr.summary td { border-bottom: none; padding-top: 0; color: var(--muted);
                                                            font-size: 13px; white-space: normal; }
#comparison-table tr.numbers td, #why-table tr.numbers td { border-bottom: none; }
.status-ok { color: #176b3a; }
.status-bad { color: var(--bad); font-weight: 600; }
.flag { display: inline-block; background: #eef1f4; border-radius: 3px; padding: 0 4px; margin: 0 2px 2px 0;
        font-size: 12px; color: inherit; text-decoration: none; }
a.verdict { text-decoration: none; border-bottom: 1px dotted currentColor; color: inherit; }
.chart svg { width: 100%; height: auto; display: block; }
#roofline-chart svg { max-width: 900px; }
.chart svg text { font-size: 11px; fill: var(--fg); }
.chart .axis line, .chart .axis path { stroke: #9aa3ab; }
.chart .grid { stroke: #eceff2; }
.chart .roof { fill: none; stroke: #444; stroke-width: 1.5; }
.panels { display: grid; grid-template-columns: repeat(auto-fill, minmax(330px, 1fr)); gap: 6px 18px; }
.panel { margin: 0; min-width: 0; }
.panel figcaption { font-size: 12px; font-weight: 600; margin: 6px 0 0 4px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 4px 0 12px; font-size: 12px; align-items: center; }
.chart .legend svg { width: 30px; height: 14px; display: inline-block; vertical-align: middle; margin-right: 4px; }
.legend .title { color: var(--muted); }
.filters { display: flex; flex-wrap: wrap; gap: 6px 22px; margin: 6px 0 10px; padding: 6px 10px;
           background: var(--alt); border-radius: 4px; font-size: 13px; }
.filters fieldset { border: none; margin: 0; padding: 0; }
.filters legend { float: left; color: var(--muted); margin-right: 6px; padding: 0; }
.filters label { margin-right: 10px; white-space: nowrap; }
dl.rules { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 16px; margin: 0; }
dl.rules dt { font-weight: 600; }
dl.rules dd { margin: 0; }
dl.rules :target, dl.rules dt:target + dd { background: #fff4c2; }
p.key { background: var(--alt); padding: 4px 8px; border-radius: 4px; }
#tip { position: absolute; pointer-events: none; background: #1d2125; color: #fff; padding: 6px 8px;
       border-radius: 4px; font-size: 12px; max-width: 420px; z-index: 10; }
details { border: 1px solid var(--line); border-radius: 4px; margin: 6px 0; padding: 4px 10px; }
details[open] { background: #fcfdfe; }
summary { cursor: pointer; }
pre { background: var(--alt); padding: 6px 8px; overflow-x: auto; font-size: 12px; }
.kv { display: grid; grid-template-columns: repeat(auto-fill, minmax(240px, 1fr)); gap: 0 16px; }
.kv div { border-bottom: 1px dotted var(--line); overflow-wrap: anywhere; }
.kv b { font-weight: 500; color: var(--muted); margin-right: 6px; }
.panel svg { max-width: 560px; }
@media (max-width: 860px) {
  body { padding: 8px 10px 32px; }
}
)CSS";
}

std::string_view report_js() {
  return R"JS(
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('attnprof-data').textContent);
  var NS = 'http://www.w3.org/2000/svg';
  // Kernels get a colour and a marker shape each (a shape survives grey-scale printing and colour
  // blindness); on the roofline the fill is the verdict's colour instead.
  var palette = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf',
                 '#7f7f7f', '#bcbd22'];
  var shapes = ['circle', 'square', 'triangle', 'diamond', 'triangle-down', 'plus', 'cross', 'star'];
  var verdictColours = {'memory-bound': '#3b75c4', 'compute-bound': '#2e9d5b', 'latency-bound': '#e08a1e',
                        'occupancy-bound': '#9b59b6', 'launch-bound': '#c0392b', 'unknown': '#8d99a6'};
  // One dash pattern per variant of a series chart, all distinct (html_series.hpp: kMaxSeriesVariants).
  var dashes = ['none', '8 3', '2 3', '10 3 2 3', '4 2', '12 3 2 3 2 3', '1 5', '6 2 1 2 1 2'];
  var memory = data.memory || 'HBM';

  function el(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(e);
    return e;
  }
  function html(tag, cls, parent, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function label(parent, x, y, s, attrs) {
    var t = el('text', Object.assign({x: x, y: y}, attrs || {}), parent);
    t.textContent = s;
    return t;
  }
  // Significant digits, so that a CPU's 0.0123 TFLOP/s reads as such and an H200's 459 too.
  function sig(v, digits) {
    if (v === null || v === undefined || !isFinite(v)) return '-';
    if (v === 0) return '0';
    var d = Math.max(0, Math.min(6, (digits || 3) - 1 - Math.floor(Math.log10(Math.abs(v)))));
    return Number(v).toFixed(d);
  }
  function short(v) { return String(Number(v.toPrecision(3))); }
  // The unit an axis (or a value) reads in: the largest prefix at or under its largest value, so that
  // an H200 reads in TFLOP/s and TB/s and a CPU in GFLOP/s and GB/s.
  function unitOf(max, base) {
    var prefixes = ['', 'k', 'M', 'G', 'T', 'P', 'E'], i = 0;
    while (i < prefixes.length - 1 && max >= Math.pow(1000, i + 1)) i++;
    return {scale: Math.pow(1000, i), name: prefixes[i] + base};
  }
  function scaled(v, k) { return v === null || v === undefined ? null : v * k; }
  function rate(v, base) {
    if (!positive(v)) return sig(v, 3) + ' ' + base;
    var u = unitOf(v, base);
    return sig(v / u.scale, 3) + ' ' + u.name;
  }
  // Powers of two from 1024 up read as 1k, 2k, ...: sequence lengths and cache sizes.
  function countText(v) { return v >= 1024 && v % 1024 === 0 ? v / 1024 + 'k' : String(v); }
  function positive(v) { return typeof v === 'number' && isFinite(v) && v > 0; }
  function distinct(list) {
    var out = [];
    list.forEach(function (v) { if (out.indexOf(v) < 0) out.push(v); });
    return out;
  }

  var tip = document.getElementById('tip');
  function showTip(ev, lines) {
    tip.textContent = '';
    lines.forEach(function (l) { html('div', '', tip, l); });
    tip.hidden = false;
    // Kept inside the page so that a tooltip near the right edge cannot widen it.
    var x = Math.min(ev.pageX + 14, document.documentElement.clientWidth - tip.offsetWidth - 4);
    tip.style.left = Math.max(0, x) + 'px';
    tip.style.top = (ev.pageY + 14) + 'px';
  }
  function hideTip() { tip.hidden = true; }
  function pointLines(p) {
    return [p.label + ' | ' + p.kernel,
            'P50 ' + sig(p.p50_us, 4) + ' us, P99 ' + sig(p.p99_us, 4) + ' us' +
                (p.p99_note ? ' (' + p.p99_note + ')' : ''),
            p.decode ? rate(scaled(p.kv_tb_per_s, 1e12), 'B/s') + ', ' + sig(p.pct_of_hbm_ceiling, 3) + '% of the ' + memory +
                           ' ceiling, ' + sig(p.bytes_per_token === null ? null : p.bytes_per_token / 1e6, 3) +
                           ' MB per generated token'
                     : rate(scaled(p.tflops, 1e12), 'FLOP/s') + ', ' + sig(p.pct_of_roof, 3) + '% of roof',
            'intensity ' + sig(p.intensity, 3) + ' FLOP/B',
            'verdict: ' + (p.verdict || '-') + (p.memory_level ? ' (' + p.memory_level + ')' : '') +
                (p.flags.length ? ' [' + p.flags.join(', ') + ']' : '')];
  }
  function hover(node, p) {
    var t = el('title', {}, node);
    t.textContent = pointLines(p).join('\n');
    node.addEventListener('mousemove', function (ev) { showTip(ev, pointLines(p)); });
    node.addEventListener('mouseleave', hideTip);
    node.addEventListener('click', function () {
      var d = document.getElementById('pt-' + p.i);
      if (d) { d.open = true; d.scrollIntoView({block: 'nearest'}); }
    });
  }
  function shapePath(shape, x, y, r) {
    var s = r * 0.9, t = r * 1.15;
    switch (shape) {
      case 'square': return 'M' + (x - s) + ' ' + (y - s) + 'h' + 2 * s + 'v' + 2 * s + 'h' + -2 * s + 'z';
      case 'triangle': return 'M' + x + ' ' + (y - t) + 'L' + (x + t) + ' ' + (y + 0.8 * t) + 'L' + (x - t) + ' ' + (y + 0.8 * t) + 'z';
      case 'triangle-down': return 'M' + x + ' ' + (y + t) + 'L' + (x + t) + ' ' + (y - 0.8 * t) + 'L' + (x - t) + ' ' + (y - 0.8 * t) + 'z';
      case 'diamond': return 'M' + x + ' ' + (y - t) + 'L' + (x + t) + ' ' + y + 'L' + x + ' ' + (y + t) + 'L' + (x - t) + ' ' + y + 'z';
      case 'plus': var a = r * 0.4;
        return 'M' + (x - a) + ' ' + (y - t) + 'h' + 2 * a + 'v' + (t - a) + 'h' + (t - a) + 'v' + 2 * a + 'h' + (a - t) +
               'v' + (t - a) + 'h' + -2 * a + 'v' + (a - t) + 'h' + (a - t) + 'v' + -2 * a + 'h' + (t - a) + 'z';
      case 'cross': var c = r * 0.35, k = r;
        return 'M' + (x - k) + ' ' + (y - k + c) + 'L' + (x - k + c) + ' ' + (y - k) + 'L' + x + ' ' + (y - c) + 'L' + (x + k - c) + ' ' + (y - k) +
               'L' + (x + k) + ' ' + (y - k + c) + 'L' + (x + c) + ' ' + y + 'L' + (x + k) + ' ' + (y + k - c) + 'L' + (x + k - c) + ' ' + (y + k) +
               'L' + x + ' ' + (y + c) + 'L' + (x - k + c) + ' ' + (y + k) + 'L' + (x - k) + ' ' + (y + k - c) + 'L' + (x - c) + ' ' + y + 'z';
      case 'star': var pts = [];
        for (var i = 0; i < 10; i++) {
          var rad = i % 2 ? r * 0.5 : t, ang = Math.PI / 5 * i - Math.PI / 2;
          pts.push((x + rad * Math.cos(ang)) + ' ' + (y + rad * Math.sin(ang)));
        }
        return 'M' + pts.join('L') + 'z';
      default: return 'M' + (x - r) + ' ' + y + 'a' + r + ' ' + r + ' 0 1 0 ' + 2 * r + ' 0a' + r + ' ' + r + ' 0 1 0 ' + -2 * r + ' 0z';
    }
  }
  function marker(g, p, x, y, r, fill, stroke, cls) {
    var m = el('path', {d: shapePath(kernelShape(p.kernel), x, y, r), fill: fill, stroke: stroke,
                        'stroke-width': 1, 'class': cls, 'data-key': p.label + ' | ' + p.kernel}, g);
    hover(m, p);
    return m;
  }
  function swatch(parent, opts) {
    var svg = el('svg', {width: 30, height: 14, viewBox: '0 0 30 14'}, parent);
    if (opts.dash !== undefined)
      el('line', {x1: 1, x2: 29, y1: 7, y2: 7, stroke: opts.stroke || '#333', 'stroke-width': opts.width || 1.8,
                  'stroke-dasharray': opts.dash, 'stroke-opacity': opts.opacity || 1}, svg);
    if (opts.shape)
      el('path', {d: shapePath(opts.shape, 15, 7, 4.5), fill: opts.fill || '#fff', stroke: opts.stroke || '#333',
                  'stroke-width': 1}, svg);
    return svg;
  }
  // items: {text, href?, swatch: {...}}; a title item has only text.
  function legend(container, title, items) {
    var box = html('div', 'legend', container);
    if (title) html('span', 'title', box, title);
    items.forEach(function (it) {
      var s = html('span', 'legend-item', box);
      swatch(s, it.swatch);
      if (it.href) {
        var a = html('a', 'verdict', s, it.text);
        a.href = it.href;
      } else {
        s.appendChild(document.createTextNode(it.text));
      }
    });
    return box;
  }

  function logScale(lo, hi, a, b) {
    var l0 = Math.log10(lo), l1 = Math.log10(hi);
    return function (v) { return a + (Math.log10(v) - l0) / (l1 - l0) * (b - a); };
  }
  function linScale(lo, hi, a, b) {
    return function (v) { return a + (v - lo) / (hi - lo) * (b - a); };
  }
  function decades(lo, hi) {
    var t = [];
    for (var e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      var v = Math.pow(10, e);
      if (v >= lo * 0.999 && v <= hi * 1.001) t.push(v);
    }
    return t;
  }
  function niceTicks(top) {
    var raw = top / 5, mag = Math.pow(10, Math.floor(Math.log10(raw))), norm = raw / mag;
    var step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag, t = [];
    for (var v = 0; v <= top * 1.0001; v += step) t.push(v);
    return t;
  }
  function frame(svg, g, xs, ys, xTicks, yTicks, xFmt, yFmt, xTitle, yTitle) {
    var axis = el('g', {'class': 'axis'}, svg);
    var lastX = -Infinity;
    xTicks.forEach(function (v) {
      var x = xs(v);
      if (x - lastX < 30) return;  // labels would overlap (e.g. 2048 and 2050)
      lastX = x;
      el('line', {x1: x, x2: x, y1: g.top, y2: g.bottom, 'class': 'grid'}, axis);
      label(axis, x, g.bottom + 15, xFmt(v), {'text-anchor': 'middle'});
    });
    yTicks.forEach(function (v) {
      var y = ys(v);
      el('line', {x1: g.left, x2: g.right, y1: y, y2: y, 'class': 'grid'}, axis);
      label(axis, g.left - 5, y + 4, yFmt(v), {'text-anchor': 'end'});
    });
    el('rect', {x: g.left, y: g.top, width: g.right - g.left, height: g.bottom - g.top,
                fill: 'none', stroke: '#9aa3ab'}, axis);
    if (xTitle) label(axis, (g.left + g.right) / 2, g.bottom + 32, xTitle, {'text-anchor': 'middle'});
    if (yTitle) label(axis, 12, (g.top + g.bottom) / 2, yTitle,
                      {'text-anchor': 'middle', transform: 'rotate(-90 12 ' + (g.top + g.bottom) / 2 + ')'});
  }

  var ok = data.points.filter(function (p) { return p.status === 'ok'; });
  var kernels = distinct(ok.map(function (p) { return p.kernel; }));
  function kernelColour(k) { return palette[kernels.indexOf(k) % palette.length]; }
  // attnprof's own kernels last, so that they are drawn on top of the vendors' and plugins'.
  function ownLast(list) {
    return list.filter(function (p) { return !p.own; }).concat(list.filter(function (p) { return p.own; }));
  }
  function kernelShape(k) { return shapes[kernels.indexOf(k) % shapes.length]; }
  function verdictColour(v) { return verdictColours[v] || verdictColours.unknown; }
  function causalText(c) { return c ? 'causal' : 'not causal'; }

  // Filters: one group of check boxes per field that takes more than one value.
  var dims = [{key: 'kernel', name: 'kernel', text: String},
              {key: 'dtype', name: 'dtype', text: String},
              {key: 'hdim', name: 'hdim', text: function (v) { return 'd' + v; }},
              {key: 'causal', name: 'mask', text: causalText}];
  var active = {};
  dims.forEach(function (d) {
    d.values = distinct(ok.map(function (p) { return p[d.key]; })).sort(function (a, b) {
      return typeof a === 'number' ? a - b : String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
    });
    if (d.key === 'kernel') d.values = kernels.slice();
    active[d.key] = d.values.slice();
  });
  function shown(p) {
    return dims.every(function (d) { return active[d.key].indexOf(p[d.key]) >= 0; });
  }
  function buildFilters() {
    var host = document.getElementById('filters');
    if (!host) return;
    dims.forEach(function (d) {
      if (d.values.length < 2) return;
      var fs = html('fieldset', '', host);
      html('legend', '', fs, d.name);
      d.values.forEach(function (v) {
        var lab = html('label', '', fs);
        var box = html('input', '', lab);
        box.type = 'checkbox';
        box.checked = true;
        box.setAttribute('data-dim', d.key);
        box.addEventListener('change', function () {
          var list = active[d.key], at = list.indexOf(v);
          if (box.checked && at < 0) list.push(v);
          if (!box.checked && at >= 0) list.splice(at, 1);
          drawAll();
        });
        lab.appendChild(document.createTextNode(' ' + d.text(v)));
      });
    });
    if (!host.childNodes.length) host.hidden = true;
  }
  function filterTable() {
    var table = document.getElementById('points-table');
    if (!table) return;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
      var p = data.points[Number(r.getAttribute('data-i'))];
      r.hidden = p.status === 'ok' && !shown(p);
    });
    // A column with nothing ("-") in any row shown is left out; point, kernel and status always stay.
    var rows = Array.prototype.filter.call(table.tBodies[0].rows, function (r) { return !r.hidden; });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      if (col < 3) return;
      var empty = rows.every(function (r) { return r.cells[col].textContent.trim() === '-'; });
      th.hidden = empty;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (r) { r.cells[col].hidden = empty; });
    });
  }

  function drawRoofline(points) {
    var W = 880, H = 470, g = {left: 64, right: W - 26, top: 14, bottom: H - 46};
    var host = document.getElementById('roofline-chart');
    var svg = el('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img'}, host);
    var bw = data.ceilings.bw;
    var dtypes = distinct(ok.map(function (p) { return p.dtype; }));
    // One roof per distinct peak: dtypes with the same peak share a line.
    var roofs = [];
    dtypes.forEach(function (d) {
      var peak = data.ceilings.flops[d];
      if (!positive(bw) || !positive(peak)) return;
      var same = roofs.filter(function (r) { return r.peak === peak; })[0];
      if (same) { same.dtype += '/' + d; return; }
      roofs.push({dtype: d, peak: peak, ridge: peak / bw});
    });
    var drawable = points.filter(function (p) { return positive(p.intensity) && positive(p.achieved_flops_per_s); });
    // The axes span every ok point, not only the shown ones, so that filtering does not move them.
    var all = ok.filter(function (p) { return positive(p.intensity) && positive(p.achieved_flops_per_s); });
    var xsAll = all.map(function (p) { return p.intensity; }).concat(roofs.map(function (r) { return r.ridge; }));
    var ysAll = all.map(function (p) { return p.achieved_flops_per_s; }).concat(roofs.map(function (r) { return r.peak; }));
    if (!xsAll.length) { xsAll = [1, 100]; ysAll = [1e12, 1e14]; }
    var xlo = Math.pow(10, Math.floor(Math.log10(Math.min.apply(null, xsAll) / 2)));
    var xhi = Math.pow(10, Math.ceil(Math.log10(Math.max.apply(null, xsAll) * 2)));
    var ylo = Math.pow(10, Math.floor(Math.log10(Math.min.apply(null, ysAll) / 2)));
    var yhi = Math.pow(10, Math.ceil(Math.log10(Math.max.apply(null, ysAll) * 1.5)));
    var xs = logScale(xlo, xhi, g.left, g.right), ys = logScale(ylo, yhi, g.bottom, g.top);
    var unit = unitOf(Math.max.apply(null, ysAll), 'FLOP/s');
    frame(svg, g, xs, ys, decades(xlo, xhi), decades(ylo, yhi), short,
          function (v) { return short(v / unit.scale); }, 'arithmetic intensity [FLOP/byte]',
          'throughput [' + unit.name + ']');
    var clip = el('clipPath', {id: 'roof-clip'}, el('defs', {}, svg));
    el('rect', {x: g.left, y: g.top, width: g.right - g.left, height: g.bottom - g.top}, clip);
    var roofG = el('g', {'clip-path': 'url(#roof-clip)'}, svg);
    // Labels above their roof; one that would touch another (bf16 and fp16 peaks a few percent apart)
    // is stacked above it rather than below its line, where the markers near the roof are.
    var labelYs = [];
    roofs.slice().sort(function (a, b) { return a.peak - b.peak; }).forEach(function (r) {
      var i = roofs.indexOf(r);
      var pts = [[xlo, Math.min(r.peak, bw * xlo)], [r.ridge, r.peak], [xhi, r.peak]];
      el('polyline', {'class': 'roof', points: pts.map(function (q) { return xs(q[0]) + ',' + ys(q[1]); }).join(' '),
                      'stroke-dasharray': i ? '6 3' : 'none'}, roofG);
      var y = ys(r.peak) - 5;
      while (labelYs.some(function (other) { return Math.abs(other - y) < 13; })) y -= 13;
      labelYs.push(y);
      label(roofG, g.right - 4, y, r.dtype + ' peak ' + short(r.peak / unit.scale) + ' ' + unit.name + ', ridge ' +
            short(r.ridge) + ' FLOP/B', {'text-anchor': 'end'});
    });
    if (roofs.length) {
      var lx = xlo * 1.5, ly = bw * lx;
      if (ly < ylo) { ly = ylo * 1.5; lx = ly / bw; }
      label(roofG, xs(lx) + 4, ys(ly) - 8, memory + ' ' + rate(bw, 'B/s'));
    }
    var pg = el('g', {}, svg);
    ownLast(drawable).forEach(function (p) {
      marker(pg, p, xs(p.intensity), ys(p.achieved_flops_per_s), 5.5, verdictColour(p.verdict), '#222', 'roof-pt');
    });
    legend(host, 'kernel:', kernels.map(function (k) {
      var sample = ok.filter(function (p) { return p.kernel === k; })[0];
      return {text: k + (sample.materialized ? ' (S/P in memory)' : ''), swatch: {shape: kernelShape(k), fill: '#fff'}};
    }));
    var verdicts = distinct(ok.map(function (p) { return p.verdict || 'unknown'; }));
    legend(host, 'verdict (fill):', verdicts.map(function (v) {
      return {text: v, href: '#verdict-' + v, swatch: {shape: 'square', fill: verdictColour(v)}};
    }));
    return drawable.length;
  }

  // The series charts (html_series.hpp decides them): per chart its x axis, panels and variants; a
  // point's `series` says where it goes. A line is one kernel at one variant.
  function seriesPoints(chart) {
    return ok.filter(function (p) { return p.series && p.series.chart === chart; });
  }
  function xTicksOf(values) {
    var v = distinct(values).sort(function (a, b) { return a - b; });
    if (v.length <= 9) return v;
    var t = [], last = v[v.length - 1];
    for (var x = 1; x <= last * 1.4; x *= 2) if (x >= v[0] / 1.4) t.push(x);
    return t;
  }
  // measure: {title, base, values(p) -> [{y, thin}] with the thick (P50) line first, logY, ceiling}.
  function drawSeries(host, chartIndex, measure) {
    var chart = data.charts[chartIndex];
    var all = seriesPoints(chartIndex);
    var points = all.filter(shown);
    var W = 440, H = 270, g = {left: 56, right: W - 10, top: 10, bottom: H - 40};
    // The axes span every ok point of the chart, not only the shown ones, so that filtering does not move them.
    var xsAll = all.map(function (p) { return p[chart.x]; }).filter(positive);
    var ysAll = [];
    all.forEach(function (p) { measure.values(p).forEach(function (v) { if (positive(v.y)) ysAll.push(v.y); }); });
    if (positive(measure.ceiling)) ysAll.push(measure.ceiling);
    if (!xsAll.length) xsAll = [1, 2];
    if (!ysAll.length) ysAll = [1, 10];
    var xlo = Math.min.apply(null, xsAll) / 1.3, xhi = Math.max.apply(null, xsAll) * 1.3;
    var ys, yTicks, unit = measure.unit || unitOf(Math.max.apply(null, ysAll), measure.base);
    if (measure.logY) {
      var ylo = Math.pow(10, Math.floor(Math.log10(Math.min.apply(null, ysAll) / 1.2)));
      var yhi = Math.pow(10, Math.ceil(Math.log10(Math.max.apply(null, ysAll) * 1.2)));
      ys = logScale(ylo, yhi, g.bottom, g.top);
      yTicks = decades(ylo, yhi);
    } else {
      var top = Math.max.apply(null, ysAll) * 1.08;
      ys = linScale(0, top, g.bottom, g.top);
      yTicks = niceTicks(top / unit.scale).map(function (v) { return v * unit.scale; });
    }
    var xs = logScale(xlo, xhi, g.left, g.right);
    var shownKernels = kernels.filter(function (k) { return points.some(function (p) { return p.kernel === k; }); });
    // One kernel drawn: the colour carries the variant too.
    var byVariant = shownKernels.length === 1 && chart.variants.length > 1;
    function colourOf(p) { return byVariant ? palette[p.series.variant % palette.length] : kernelColour(p.kernel); }
    var grid = html('div', 'panels', host);
    var drawn = 0;
    chart.panels.forEach(function (name, panelIndex) {
      var inPanel = points.filter(function (p) { return p.series.panel === panelIndex; });
      if (!inPanel.length) return;
      var fig = html('figure', 'panel', grid);
      fig.setAttribute('data-panel', String(panelIndex));
      html('figcaption', '', fig, name);
      var svg = el('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img'}, fig);
      frame(svg, g, xs, ys, xTicksOf(xsAll), yTicks, countText, function (v) { return short(v / unit.scale); },
            chart.x_title, measure.title + ' [' + unit.name + ']');
      if (positive(measure.ceiling)) {
        var cy = ys(measure.ceiling);
        el('line', {x1: g.left, x2: g.right, y1: cy, y2: cy, 'class': 'roof', 'stroke-dasharray': '6 3'}, svg);
        label(svg, g.right - 4, cy - 5, memory + ' ' + rate(measure.ceiling, measure.base), {'text-anchor': 'end'});
      }
      // Lines: one per (kernel, variant), the vendors' first; each drawn with its markers.
      var lines = [], byId = {};
      ownLast(inPanel).forEach(function (p) {
        var id = p.kernel + '|' + p.series.variant;
        if (!byId[id]) { byId[id] = []; lines.push(byId[id]); }
        byId[id].push(p);
      });
      lines.forEach(function (line) {
        line.sort(function (a, b) { return a[chart.x] - b[chart.x]; });
        var colour = colourOf(line[0]), dash = dashes[line[0].series.variant % dashes.length];
        var tracks = {};
        line.forEach(function (p) {
          measure.values(p).forEach(function (v, k) {
            if (!positive(v.y)) return;
            (tracks[k] = tracks[k] || {thin: v.thin, xy: []}).xy.push([xs(p[chart.x]), ys(v.y)]);
          });
        });
        Object.keys(tracks).forEach(function (k) {
          var t = tracks[k];
          if (t.xy.length < 2) return;
          el('polyline', {points: t.xy.map(function (q) { return q[0] + ',' + q[1]; }).join(' '), fill: 'none',
                          stroke: colour, 'stroke-width': t.thin ? 1 : 1.8, 'stroke-opacity': t.thin ? 0.55 : 1,
                          'stroke-dasharray': dash, 'class': 'series',
                          'data-line': line[0].kernel + '|' + line[0].series.variant}, svg);
        });
        line.forEach(function (p) {
          var v = measure.values(p)[0];
          if (!positive(v.y)) return;
          marker(svg, p, xs(p[chart.x]), ys(v.y), 3.6, colour, '#fff', 'seq-pt');
          drawn++;
        });
      });
    });
    if (!grid.childNodes.length) html('p', 'note', host, 'No point matches the filters.');
    legend(host, 'kernel:', shownKernels.map(function (k) {
      return {text: k, swatch: {shape: kernelShape(k), fill: byVariant ? '#fff' : kernelColour(k),
                                stroke: byVariant ? '#333' : '#fff', dash: 'none', width: 1.8}};
    }).concat(measure.values(all[0] || {})[1] ? [{text: 'thick: P50, thin: P99', swatch: {dash: 'none', width: 1}}] : []));
    var shownVariants = distinct(points.map(function (p) { return p.series.variant; })).sort(function (a, b) { return a - b; });
    if (chart.variants.length > 1 && shownVariants.length)
      legend(host, 'line (' + chart.variant_title + '):', shownVariants.map(function (v) {
        return {text: chart.variants[v], swatch: {dash: dashes[v % dashes.length],
                                                  stroke: byVariant ? palette[v % palette.length] : '#333'}};
      }));
    return drawn;
  }
  function measureOf(chart, which) {
    if (which === 'latency')
      return {title: 'latency', unit: {scale: 1, name: 'us'}, logY: true,
              values: function (p) { return [{y: p.p50_us}, {y: p.p99_us, thin: true}]; }};
    if (chart.id === 'decode')
      return {title: 'KV bandwidth', base: 'B/s', ceiling: data.ceilings.bw,
              values: function (p) { return [{y: scaled(p.kv_tb_per_s, 1e12)}]; }};
    return {title: 'throughput', base: 'FLOP/s', values: function (p) { return [{y: scaled(p.tflops, 1e12)}]; }};
  }

  function seriesHosts() { return Array.prototype.slice.call(document.querySelectorAll('.chart[data-chart]')); }
  function clear(host) {
    while (host.firstChild) host.removeChild(host.firstChild);
  }
  function drawAll() {
    clear(document.getElementById('roofline-chart'));
    var drawn = drawRoofline(ok.filter(shown));
    seriesHosts().forEach(function (host) {
      clear(host);
      var index = Number(host.getAttribute('data-chart'));
      drawSeries(host, index, measureOf(data.charts[index], host.getAttribute('data-measure')));
    });
    filterTable();
    return drawn;
  }

  function makeSortable(table) {
    var head = table.tHead.rows[0];
    Array.prototype.forEach.call(head.cells, function (th, col) {
      th.tabIndex = 0;
      var go = function () { sortBy(table, col, th); };
      th.addEventListener('click', go);
      th.addEventListener('keydown', function (ev) { if (ev.key === 'Enter') go(); });
    });
  }
  // Sorts the rows of the one body, or, in a table of several bodies (a comparison row with its
  // summary row below), the bodies by their first row.
  function sortBy(table, col, th) {
    var dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', dir === 1 ? 'ascending' : 'descending');
    var grouped = table.tBodies.length > 1;
    var parent = grouped ? table : table.tBodies[0];
    var units = Array.prototype.slice.call(grouped ? table.tBodies : table.tBodies[0].rows);
    var key = function (u) {
      var cell = (grouped ? u.rows[0] : u).cells[col];
      var v = cell.getAttribute('data-v');
      return v === null ? cell.textContent.trim() : v;
    };
    var numeric = units.every(function (u) { var k = key(u); return k === '' || !isNaN(Number(k)); });
    units.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (x === '' || y === '') return (x === '') - (y === '');
      return dir * (numeric ? Number(x) - Number(y) : x.localeCompare(y));
    });
    units.forEach(function (u) { parent.appendChild(u); });
  }

  buildFilters();
  var drawn = drawAll();
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), makeSortable);
  document.body.setAttribute('data-roofline-points', String(drawn));
  document.body.setAttribute('data-render-ok', '1');
})();
)JS";
}

}  // namespace attnprof::report::detail
