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
/* Short words (kernel names, verdicts) stay on one line; only the flags wrap. */
#points-table td { white-space: nowrap; }
#points-table td.flags { white-space: normal; min-width: 9em; }
tbody tr:nth-child(even) { background: var(--alt); }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort="ascending"]::after { content: " \25B2"; }
table.sortable th[aria-sort="descending"]::after { content: " \25BC"; }
#comparison-table tbody { border-bottom: 1px solid var(--line); }
#comparison-table tbody tr { background: none; }
#comparison-table tbody:nth-of-type(even) { background: var(--alt); }
#comparison-table tr.summary td { border-bottom: none; padding-top: 0; color: var(--muted); font-size: 13px;
                                  white-space: normal; }
#comparison-table tr.numbers td { border-bottom: none; }
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
  var dashes = ['none', '7 3', '2 3', '9 3 2 3', '4 2 1 2'];

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
            p.decode ? sig(p.kv_tb_per_s, 3) + ' TB/s, ' + sig(p.pct_of_hbm_ceiling, 3) + '% of the HBM ceiling, ' +
                           sig(p.bytes_per_token === null ? null : p.bytes_per_token / 1e6, 3) + ' MB per generated token'
                     : sig(p.tflops, 3) + ' TFLOP/s, ' + sig(p.pct_of_roof, 3) + '% of roof',
            'intensity ' + sig(p.intensity, 3) + ' FLOP/B',
            'verdict: ' + (p.verdict || '-') + (p.flags.length ? ' [' + p.flags.join(', ') + ']' : '')];
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
    frame(svg, g, xs, ys, decades(xlo, xhi), decades(ylo, yhi), short,
          function (v) { return short(v / 1e12); }, 'arithmetic intensity [FLOP/byte]', 'throughput [TFLOP/s]');
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
      label(roofG, g.right - 4, y, r.dtype + ' peak ' + short(r.peak / 1e12) + ' TFLOP/s, ridge ' +
            short(r.ridge) + ' FLOP/B', {'text-anchor': 'end'});
    });
    if (roofs.length) {
      var lx = xlo * 1.5, ly = bw * lx;
      if (ly < ylo) { ly = ylo * 1.5; lx = ly / bw; }
      label(roofG, xs(lx) + 4, ys(ly) - 8, 'HBM ' + short(bw / 1e12) + ' TB/s');
    }
    var pg = el('g', {}, svg);
    drawable.forEach(function (p) {
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

  // The swept axis: the first shape field that takes more than one value among the ok points.
  var axes = [{key: 'seq_q', text: 'sequence length (queries)'}, {key: 'seq_k', text: 'keys per query'},
              {key: 'batch', text: 'batch'}, {key: 'heads', text: 'heads'}, {key: 'hdim', text: 'head dimension'}];
  var xAxis = axes.filter(function (a) {
    return distinct(ok.map(function (p) { return p[a.key]; })).length > 1;
  })[0] || axes[0];
  // Small multiples: one panel per (dtype, hdim, mask); in a panel, one line per kernel, and per
  // variant of the remaining fields when a kernel has several points at one x (batch=1,4).
  function panelKey(p) {
    return p.dtype + ' \u00b7 ' + (xAxis.key === 'hdim' ? '' : 'hdim ' + p.hdim + ' \u00b7 ') + causalText(p.causal);
  }
  function variantOf(p) {
    var parts = [];
    if (xAxis.key !== 'batch') parts.push('b' + p.batch);
    if (xAxis.key !== 'heads') parts.push('h' + p.heads + '/' + p.kv_heads);
    if (xAxis.key !== 'seq_q' && xAxis.key !== 'seq_k') parts.push('s' + p.seq_q + 'x' + p.seq_k);
    else if (xAxis.key === 'seq_q' && p.seq_k !== p.seq_q) parts.push('keys ' + p.seq_k);
    return parts.join(' ');
  }
  function panelsOf(points) {
    var panels = {}, order = [];
    points.forEach(function (p) {
      var k = panelKey(p);
      if (!panels[k]) { panels[k] = {name: k, sort: [p.dtype, p.hdim, p.causal ? 1 : 0], points: []}; order.push(k); }
      panels[k].points.push(p);
    });
    // Variants only where a kernel repeats an x value somewhere: else the kernel alone names the line.
    var needVariants = false;
    order.forEach(function (k) {
      var seen = {};
      panels[k].points.forEach(function (p) {
        var id = p.kernel + '|' + p[xAxis.key];
        if (seen[id]) needVariants = true;
        seen[id] = true;
      });
    });
    var variants = needVariants ? distinct(points.map(variantOf)) : [''];
    // dtype, then hdim by value, then the mask: the order a reader scans a sweep in.
    order.sort(function (a, b) {
      var x = panels[a].sort, y = panels[b].sort;
      for (var i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
      return 0;
    });
    return {variants: variants, panels: order.map(function (k) {
      var byLine = {}, lines = [];
      panels[k].points.forEach(function (p) {
        var v = needVariants ? variantOf(p) : '';
        var id = p.kernel + '|' + v;
        if (!byLine[id]) { byLine[id] = {kernel: p.kernel, variant: v, points: []}; lines.push(byLine[id]); }
        byLine[id].points.push(p);
      });
      lines.forEach(function (l) { l.points.sort(function (a, b) { return a[xAxis.key] - b[xAxis.key]; }); });
      return {name: k, lines: lines};
    })};
  }
  function xTicksOf(values) {
    var v = distinct(values).sort(function (a, b) { return a - b; });
    if (v.length <= 9) return v;
    var t = [], last = v[v.length - 1];
    for (var x = 1; x <= last * 1.4; x *= 2) if (x >= v[0] / 1.4) t.push(x);
    return t;
  }
  // values(p): [{y, thin}], the thick (P50) line first.
  function drawPanels(id, yTitle, values, logY) {
    var host = document.getElementById(id);
    var points = ok.filter(function (p) { return shown(p) && positive(p[xAxis.key]); });
    var grouped = panelsOf(points);
    var xsAll = ok.map(function (p) { return p[xAxis.key]; }).filter(positive);
    var ysAll = [];
    ok.forEach(function (p) { values(p).forEach(function (v) { if (positive(v.y)) ysAll.push(v.y); }); });
    if (!xsAll.length) xsAll = [128, 8192];
    if (!ysAll.length) ysAll = [1, 10];
    var W = 440, H = 270, g = {left: 52, right: W - 10, top: 10, bottom: H - 40};
    var xlo = Math.min.apply(null, xsAll) / 1.3, xhi = Math.max.apply(null, xsAll) * 1.3;
    var ys, yTicks;
    if (logY) {
      var ylo = Math.pow(10, Math.floor(Math.log10(Math.min.apply(null, ysAll) / 1.2)));
      var yhi = Math.pow(10, Math.ceil(Math.log10(Math.max.apply(null, ysAll) * 1.2)));
      ys = logScale(ylo, yhi, g.bottom, g.top);
      yTicks = decades(ylo, yhi);
    } else {
      var top = Math.max.apply(null, ysAll) * 1.08;
      ys = linScale(0, top, g.bottom, g.top);
      yTicks = niceTicks(top);
    }
    var xs = logScale(xlo, xhi, g.left, g.right);
    var grid = html('div', 'panels', host);
    var count = 0;
    grouped.panels.forEach(function (panel) {
      var fig = html('figure', 'panel', grid);
      html('figcaption', '', fig, panel.name);
      var svg = el('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img'}, fig);
      frame(svg, g, xs, ys, xTicksOf(xsAll), yTicks, String, short, xAxis.text, yTitle);
      panel.lines.forEach(function (line) {
        var colour = kernelColour(line.kernel);
        var dash = dashes[grouped.variants.indexOf(line.variant) % dashes.length];
        var tracks = {};
        line.points.forEach(function (p) {
          values(p).forEach(function (v, k) {
            if (!positive(v.y)) return;
            (tracks[k] = tracks[k] || {thin: v.thin, xy: []}).xy.push([xs(p[xAxis.key]), ys(v.y)]);
          });
        });
        Object.keys(tracks).forEach(function (k) {
          var t = tracks[k];
          el('polyline', {points: t.xy.map(function (q) { return q[0] + ',' + q[1]; }).join(' '), fill: 'none',
                          stroke: colour, 'stroke-width': t.thin ? 1 : 1.8, 'stroke-opacity': t.thin ? 0.55 : 1,
                          'stroke-dasharray': dash, 'class': 'series'}, svg);
        });
        line.points.forEach(function (p) {
          var v = values(p)[0];
          if (!positive(v.y)) return;
          marker(svg, p, xs(p[xAxis.key]), ys(v.y), 3.6, colour, '#fff', 'seq-pt');
          count++;
        });
      });
    });
    if (!grouped.panels.length) html('p', 'note', host, 'No point matches the filters.');
    var shownKernels = kernels.filter(function (k) { return active.kernel.indexOf(k) >= 0; });
    legend(host, 'kernel:', shownKernels.map(function (k) {
      return {text: k, swatch: {shape: kernelShape(k), fill: kernelColour(k), stroke: '#fff', dash: 'none',
                                width: 1.8}};
    }).concat(values(ok[0] || {})[1] ? [{text: 'thick: P50, thin: P99', swatch: {dash: 'none', width: 1}}] : []));
    if (grouped.variants.length > 1)
      legend(host, 'line style:', grouped.variants.map(function (v, i) {
        return {text: v, swatch: {dash: dashes[i % dashes.length]}};
      }));
    return count;
  }

  function clear(id) {
    var host = document.getElementById(id);
    while (host.firstChild) host.removeChild(host.firstChild);
  }
  function drawAll() {
    ['roofline-chart', 'tflops-chart', 'latency-chart'].forEach(clear);
    var points = ok.filter(shown);
    var drawn = drawRoofline(points);
    drawPanels('tflops-chart', 'TFLOP/s', function (p) { return [{y: p.tflops}]; }, false);
    drawPanels('latency-chart', 'latency [us]', function (p) {
      return [{y: p.p50_us}, {y: p.p99_us, thin: true}];
    }, true);
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

  var axisTitle = document.getElementById('sweep-axis');
  if (axisTitle) axisTitle.textContent = xAxis.text;
  buildFilters();
  var drawn = drawAll();
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), makeSortable);
  document.body.setAttribute('data-roofline-points', String(drawn));
  document.body.setAttribute('data-render-ok', '1');
})();
)JS";
}

}  // namespace attnprof::report::detail
