#include "report/html_assets.hpp"

namespace attnprof::report::detail {

std::string_view report_css() {
  return R"CSS(
:root { --fg: #1d2125; --muted: #5c6670; --line: #d5dae0; --bg: #ffffff; --alt: #f5f7f9;
        --ref: #d95f02; --fused: #1b9e77; --bad: #b00020; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; max-width: 1200px; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 8px 0 2px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 14px; margin: 14px 0 4px; }
.sub, .note { color: var(--muted); }
dl.context { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.context dt { color: var(--muted); }
dl.context dd { margin: 0; word-break: break-word; }
ul.notices li { color: #7a4d00; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; }
td:first-child { white-space: nowrap; }
tbody tr:nth-child(even) { background: var(--alt); }
table.sortable th { cursor: pointer; user-select: none; white-space: nowrap; }
table.sortable th[aria-sort="ascending"]::after { content: " \25B2"; }
table.sortable th[aria-sort="descending"]::after { content: " \25BC"; }
.status-ok { color: #176b3a; }
.status-bad { color: var(--bad); font-weight: 600; }
.flag { display: inline-block; background: #eef1f4; border-radius: 3px; padding: 0 4px; margin: 0 2px 2px 0;
        font-size: 12px; }
.chart svg { width: 100%; height: auto; max-width: 900px; display: block; }
.chart svg text { font-size: 11px; fill: var(--fg); }
.chart .axis line, .chart .axis path { stroke: #9aa3ab; }
.chart .grid { stroke: #eceff2; }
.chart .roof { fill: none; stroke: #444; stroke-width: 1.5; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 4px 0 12px; font-size: 12px; }
.legend span.swatch { display: inline-block; width: 11px; height: 11px; margin-right: 4px;
                      vertical-align: -1px; }
#tip { position: absolute; pointer-events: none; background: #1d2125; color: #fff; padding: 6px 8px;
       border-radius: 4px; font-size: 12px; max-width: 420px; z-index: 10; }
details { border: 1px solid var(--line); border-radius: 4px; margin: 6px 0; padding: 4px 10px; }
details[open] { background: #fcfdfe; }
summary { cursor: pointer; }
pre { background: var(--alt); padding: 6px 8px; overflow-x: auto; font-size: 12px; }
.kv { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 0 16px; }
.kv div { border-bottom: 1px dotted var(--line); }
.kv b { font-weight: 500; color: var(--muted); margin-right: 6px; }
)CSS";
}

std::string_view report_js() {
  return R"JS(
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('attnprof-data').textContent);
  var NS = 'http://www.w3.org/2000/svg';
  var palette = ['#d95f02', '#1b9e77', '#7570b3', '#e7298a', '#66a61e', '#e6ab02', '#a6761d',
                 '#1f78b4', '#666666', '#b15928'];

  function el(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(e);
    return e;
  }
  function label(parent, x, y, s, attrs) {
    var t = el('text', Object.assign({x: x, y: y}, attrs || {}), parent);
    t.textContent = s;
    return t;
  }
  function num(v, d) { return (v === null || v === undefined) ? '-' : Number(v).toFixed(d); }
  function short(v) { return String(Number(v.toPrecision(3))); }
  function positive(v) { return typeof v === 'number' && isFinite(v) && v > 0; }

  var tip = document.getElementById('tip');
  function showTip(ev, lines) {
    tip.textContent = '';
    lines.forEach(function (l) {
      var d = document.createElement('div');
      d.textContent = l;
      tip.appendChild(d);
    });
    tip.hidden = false;
    tip.style.left = (ev.pageX + 14) + 'px';
    tip.style.top = (ev.pageY + 14) + 'px';
  }
  function hideTip() { tip.hidden = true; }
  function pointLines(p) {
    return [p.label + ' | ' + p.kernel,
            'P50 ' + num(p.p50_us, 2) + ' us, P99 ' + num(p.p99_us, 2) + ' us',
            num(p.tflops, 1) + ' TFLOP/s, ' + num(p.pct_of_roof, 1) + '% of roof',
            'intensity ' + num(p.intensity, 2) + ' FLOP/B',
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
  // Reference-like kernels (S/P in memory) are circles, fused ones squares; colour per kernel.
  function marker(g, p, x, y, colour, cls) {
    var m;
    if (p.materialized) {
      m = el('circle', {cx: x, cy: y, r: 5.5}, g);
    } else {
      m = el('rect', {x: x - 5, y: y - 5, width: 10, height: 10}, g);
    }
    m.setAttribute('class', cls);
    m.setAttribute('fill', colour);
    m.setAttribute('fill-opacity', '0.85');
    m.setAttribute('stroke', '#222');
    m.setAttribute('stroke-width', '0.6');
    m.setAttribute('data-key', p.label + ' | ' + p.kernel);
    hover(m, p);
    return m;
  }
  function legend(container, items) {
    var box = document.createElement('div');
    box.className = 'legend';
    items.forEach(function (it) {
      var s = document.createElement('span');
      var sw = document.createElement('span');
      sw.className = 'swatch';
      sw.style.background = it.colour;
      if (it.round) sw.style.borderRadius = '50%';
      s.appendChild(sw);
      s.appendChild(document.createTextNode(it.text));
      box.appendChild(s);
    });
    container.appendChild(box);
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
  function frame(svg, g, xs, ys, xTicks, yTicks, xFmt, yFmt, xTitle, yTitle) {
    var axis = el('g', {'class': 'axis'}, svg);
    var lastX = -Infinity;
    xTicks.forEach(function (v) {
      var x = xs(v);
      if (x - lastX < 28) return;  // labels would overlap (e.g. 2048 and 2050)
      lastX = x;
      el('line', {x1: x, x2: x, y1: g.top, y2: g.bottom, 'class': 'grid'}, axis);
      label(axis, x, g.bottom + 16, xFmt(v), {'text-anchor': 'middle'});
    });
    yTicks.forEach(function (v) {
      var y = ys(v);
      el('line', {x1: g.left, x2: g.right, y1: y, y2: y, 'class': 'grid'}, axis);
      label(axis, g.left - 6, y + 4, yFmt(v), {'text-anchor': 'end'});
    });
    el('rect', {x: g.left, y: g.top, width: g.right - g.left, height: g.bottom - g.top,
                fill: 'none', stroke: '#9aa3ab'}, axis);
    label(axis, (g.left + g.right) / 2, g.bottom + 36, xTitle, {'text-anchor': 'middle'});
    label(axis, 14, (g.top + g.bottom) / 2, yTitle,
          {'text-anchor': 'middle', transform: 'rotate(-90 14 ' + (g.top + g.bottom) / 2 + ')'});
  }
  function newSvg(id, w, h) {
    var host = document.getElementById(id);
    var svg = el('svg', {viewBox: '0 0 ' + w + ' ' + h, role: 'img'}, host);
    return {host: host, svg: svg};
  }

  var ok = data.points.filter(function (p) { return p.status === 'ok'; });
  var kernels = [];
  ok.forEach(function (p) { if (kernels.indexOf(p.kernel) < 0) kernels.push(p.kernel); });
  function kernelColour(k) { return palette[kernels.indexOf(k) % palette.length]; }

  function drawRoofline() {
    var W = 880, H = 480, g = {left: 70, right: W - 20, top: 16, bottom: H - 50};
    var c = newSvg('roofline-chart', W, H);
    var bw = data.ceilings.bw;
    var dtypes = [];
    ok.forEach(function (p) { if (dtypes.indexOf(p.dtype) < 0) dtypes.push(p.dtype); });
    // One roof per distinct peak: dtypes with the same peak (bf16 and fp16) share a line.
    var roofs = [];
    dtypes.forEach(function (d) {
      var peak = data.ceilings.flops[d];
      if (!positive(bw) || !positive(peak)) return;
      var same = roofs.filter(function (r) { return r.peak === peak; })[0];
      if (same) { same.dtype += '/' + d; return; }
      roofs.push({dtype: d, peak: peak, ridge: peak / bw});
    });
    var drawable = ok.filter(function (p) { return positive(p.intensity) && positive(p.achieved_flops_per_s); });
    var xsAll = drawable.map(function (p) { return p.intensity; })
                        .concat(roofs.map(function (r) { return r.ridge; }));
    var ysAll = drawable.map(function (p) { return p.achieved_flops_per_s; })
                        .concat(roofs.map(function (r) { return r.peak; }));
    if (!xsAll.length) { xsAll = [1, 100]; ysAll = [1e12, 1e14]; }
    var xlo = Math.pow(10, Math.floor(Math.log10(Math.min.apply(null, xsAll) / 2)));
    var xhi = Math.pow(10, Math.ceil(Math.log10(Math.max.apply(null, xsAll) * 2)));
    var ylo = Math.pow(10, Math.floor(Math.log10(Math.min.apply(null, ysAll) / 2)));
    var yhi = Math.pow(10, Math.ceil(Math.log10(Math.max.apply(null, ysAll) * 1.5)));
    var xs = logScale(xlo, xhi, g.left, g.right), ys = logScale(ylo, yhi, g.bottom, g.top);
    frame(c.svg, g, xs, ys, decades(xlo, xhi), decades(ylo, yhi), short,
          function (v) { return short(v / 1e12); }, 'arithmetic intensity [FLOP/byte]',
          'throughput [TFLOP/s]');
    var clip = el('clipPath', {id: 'roof-clip'}, el('defs', {}, c.svg));
    el('rect', {x: g.left, y: g.top, width: g.right - g.left, height: g.bottom - g.top}, clip);
    var roofG = el('g', {'clip-path': 'url(#roof-clip)'}, c.svg);
    // Labels above their roof, except a roof whose label would touch the one above it (bf16 and fp16
    // peaks a few percent apart): that label goes below its line.
    var labelYs = [];
    roofs.slice().sort(function (a, b) { return b.peak - a.peak; }).forEach(function (r) {
      var i = roofs.indexOf(r);
      var pts = [[xlo, Math.min(r.peak, bw * xlo)], [r.ridge, r.peak], [xhi, r.peak]];
      el('polyline', {'class': 'roof', points: pts.map(function (q) { return xs(q[0]) + ',' + ys(q[1]); }).join(' '),
                      'stroke-dasharray': i ? '6 3' : 'none'}, roofG);
      var y = ys(r.peak) - 5;
      if (labelYs.some(function (other) { return Math.abs(other - y) < 13; })) y = ys(r.peak) + 13;
      labelYs.push(y);
      label(roofG, g.right - 4, y,
            r.dtype + ' peak ' + short(r.peak / 1e12) + ' TFLOP/s, ridge ' + short(r.ridge) + ' FLOP/B',
            {'text-anchor': 'end'});
    });
    if (roofs.length) {
      var lx = xlo * 1.5, ly = bw * lx;
      if (ly < ylo) { ly = ylo * 1.5; lx = ly / bw; }
      label(roofG, xs(lx) + 4, ys(ly) - 8, 'HBM ' + short(bw / 1e12) + ' TB/s');
    }
    var pg = el('g', {}, c.svg);
    drawable.forEach(function (p) {
      marker(pg, p, xs(p.intensity), ys(p.achieved_flops_per_s), kernelColour(p.kernel), 'roof-pt');
    });
    legend(c.host, kernels.map(function (k) {
      var sample = ok.filter(function (p) { return p.kernel === k; })[0];
      return {colour: kernelColour(k), round: sample.materialized,
              text: k + (sample.materialized ? ' (S/P in memory: circle)' : ' (fused: square)')};
    }));
    return drawable.length;
  }

  function seriesOf(points) {
    var map = {}, order = [];
    points.forEach(function (p) {
      var key = p.kernel + ' \u00b7 ' + p.series;
      if (!map[key]) { map[key] = []; order.push(key); }
      map[key].push(p);
    });
    return order.map(function (k, i) {
      return {name: k, colour: palette[i % palette.length],
              points: map[k].sort(function (a, b) { return a.seq_q - b.seq_q; })};
    });
  }
  function seqTicks(points) {
    var seqs = [];
    points.forEach(function (p) { if (seqs.indexOf(p.seq_q) < 0) seqs.push(p.seq_q); });
    seqs.sort(function (a, b) { return a - b; });
    if (seqs.length <= 10) return seqs;
    var t = [];
    var last = seqs[seqs.length - 1];
    for (var v = 1; v <= last * 1.4; v *= 2) if (v >= seqs[0] / 1.4) t.push(v);
    return t;
  }
  function drawSeqChart(id, yTitle, values, logY) {
    var W = 880, H = 360, g = {left: 70, right: W - 20, top: 16, bottom: H - 50};
    var c = newSvg(id, W, H);
    var pts = ok.filter(function (p) { return positive(p.seq_q); });
    var series = seriesOf(pts);
    var xsAll = pts.map(function (p) { return p.seq_q; });
    var ysAll = [];
    pts.forEach(function (p) { values(p).forEach(function (v) { if (positive(v.y)) ysAll.push(v.y); }); });
    if (!xsAll.length) { xsAll = [128, 8192]; }
    if (!ysAll.length) { ysAll = [1, 10]; }
    var xlo = Math.min.apply(null, xsAll) / 1.4, xhi = Math.max.apply(null, xsAll) * 1.4;
    var xs = logScale(xlo, xhi, g.left, g.right);
    var ys, yTicks;
    if (logY) {
      var ylo = Math.pow(10, Math.floor(Math.log10(Math.min.apply(null, ysAll) / 1.2)));
      var yhi = Math.pow(10, Math.ceil(Math.log10(Math.max.apply(null, ysAll) * 1.2)));
      ys = logScale(ylo, yhi, g.bottom, g.top);
      yTicks = decades(ylo, yhi);
    } else {
      var top = Math.max.apply(null, ysAll) * 1.1;
      ys = linScale(0, top, g.bottom, g.top);
      yTicks = [];
      var raw = top / 6, mag = Math.pow(10, Math.floor(Math.log10(raw))), norm = raw / mag;
      var step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
      for (var v = 0; v <= top; v += step) yTicks.push(v);
    }
    frame(c.svg, g, xs, ys, seqTicks(pts), yTicks, String, short, 'sequence length (seq_q)', yTitle);
    var items = [];
    series.forEach(function (s) {
      var lines = {};
      s.points.forEach(function (p) {
        values(p).forEach(function (v, k) {
          if (!positive(v.y)) return;
          (lines[k] = lines[k] || {dash: v.dash, xy: []}).xy.push([xs(p.seq_q), ys(v.y)]);
        });
      });
      Object.keys(lines).forEach(function (k) {
        var l = lines[k];
        el('polyline', {points: l.xy.map(function (q) { return q[0] + ',' + q[1]; }).join(' '),
                        fill: 'none', stroke: s.colour, 'stroke-width': 1.6,
                        'stroke-dasharray': l.dash ? '5 3' : 'none'}, c.svg);
      });
      s.points.forEach(function (p) {
        values(p).forEach(function (v) {
          if (!positive(v.y)) return;
          var m = el('circle', {cx: xs(p.seq_q), cy: ys(v.y), r: 3.2, fill: s.colour, 'class': 'seq-pt'}, c.svg);
          hover(m, p);
        });
      });
      items.push({colour: s.colour, text: s.name, round: true});
    });
    legend(c.host, items);
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
  function sortBy(table, col, th) {
    var dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', dir === 1 ? 'ascending' : 'descending');
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var key = function (r) {
      var cell = r.cells[col];
      var v = cell.getAttribute('data-v');
      return v === null ? cell.textContent.trim() : v;
    };
    var numeric = rows.every(function (r) { var k = key(r); return k === '' || !isNaN(Number(k)); });
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (x === '' || y === '') return (x === '') - (y === '');
      return dir * (numeric ? Number(x) - Number(y) : x.localeCompare(y));
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  var drawn = drawRoofline();
  drawSeqChart('tflops-chart', 'throughput [TFLOP/s]', function (p) { return [{y: p.tflops}]; }, false);
  drawSeqChart('latency-chart', 'latency [us] (P50 solid, P99 dashed)',
               function (p) { return [{y: p.p50_us}, {y: p.p99_us, dash: true}]; }, true);
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), makeSortable);
  document.body.setAttribute('data-roofline-points', String(drawn));
  document.body.setAttribute('data-render-ok', '1');
})();
)JS";
}

}  // namespace attnprof::report::detail
