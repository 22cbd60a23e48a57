#!/usr/bin/env python3
"""Renders results files to HTML with the built binary and loads the reports in headless Chromium.

All the reports are loaded side by side into one measuring page per frame width (1400 px and 800 px),
so the test starts Chromium once per width whatever the number of reports. In each report, at each
width, it checks:
- the page's script ran to its end (it sets data-render-ok on <body>; a JavaScript error leaves it
  absent), the roofline has one marker per ok point with an intensity and a throughput (and some
  point has them), no console error was logged, and no markup
  from the data made it into the DOM (two <script> elements, no <img>);
- the layout as a reader meets it: no sideways scroll of the page, no table row taller than 150 px,
  the points table's verdict column inside the frame (not scrolled out of its box), a table of
  contents whose links all land, every chart drawn (an SVG with markers, at least 250 px wide), no
  legend of more than 12 entries, a rule for every verdict link;
- the series charts: no x axis holds both decode points (seq_q <= 16) and prefill points, a line of
  one kernel and variant has one point per x, every such line of two or more points is drawn (a
  polyline), and no two variants of a chart share a dash pattern.
Exit 77 (skipped) when no Chromium is installed.

usage: browser_test.py ATTNPROF BUILD_DIR RESULTS.json... [--shots DIR]
  --shots DIR: also write the screenshots the docs show (docs/img) into DIR, each of the report in
  reports/ that SHOTS names (its results file must be among those given).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
MAX_ROW_PX = 150
MAX_LEGEND_ENTRIES = 12
MIN_CHART_PX = 250
DECODE_MAX_SEQ_Q = 16
WIDTHS = (1400, 800)

# Loaded next to the reports: frames each at the given width and, once all have loaded, measures them
# and writes what it found into <body data-layout="..."> for --dump-dom to return. Reading a frame's
# document needs --allow-file-access-from-files (all are file:// pages).
MEASURE_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
%(frames)s
<script>
var frames = Array.prototype.slice.call(document.querySelectorAll('iframe'));
function measure(f) {
  var out = {};
  try {
    var d = f.contentDocument, root = d.documentElement;
    var data = JSON.parse(d.getElementById('attnprof-data').textContent);
    out.render_ok = d.body.getAttribute('data-render-ok');
    out.roofline_attr = d.body.getAttribute('data-roofline-points');
    out.roof_markers = d.querySelectorAll('.roof-pt').length;
    // A point has a place on the roofline where it has an intensity and a throughput (a calibration
    // probe that launches an empty kernel has neither).
    out.roof_placeable = data.points.filter(function (p) {
      return p.status === 'ok' && p.intensity > 0 && p.achieved_flops_per_s > 0;
    }).length;
    out.scripts = d.querySelectorAll('script').length;
    out.imgs = d.querySelectorAll('img').length;
    out.scroll_width = root.scrollWidth;
    out.client_width = root.clientWidth;
    out.tallest_rows = [];
    Array.prototype.forEach.call(d.querySelectorAll('table tr'), function (tr) {
      var h = tr.getBoundingClientRect().height;
      if (h > 0) out.tallest_rows.push([Math.round(h), (tr.closest('table').id || '?') + ': ' +
                                        tr.textContent.trim().slice(0, 60)]);
    });
    out.tallest_rows.sort(function (a, b) { return b[0] - a[0]; });
    out.tallest_rows = out.tallest_rows.slice(0, 3);
    out.rows_measured = d.querySelectorAll('table tr').length;
    // The verdict column: its header inside the table's scrolling box and inside the frame.
    var table = d.getElementById('points-table');
    var th = table && Array.prototype.filter.call(table.tHead.rows[0].cells, function (c) {
      return c.textContent.trim() === 'verdict';
    })[0];
    if (th && !th.hidden) {
      var r = th.getBoundingClientRect(), box = table.parentNode.getBoundingClientRect();
      out.verdict = {left: r.left, right: r.right, box_left: box.left, box_right: box.right, frame: root.clientWidth};
    }
    var toc = d.getElementById('toc');
    out.toc = toc ? Array.prototype.map.call(toc.querySelectorAll('a'), function (a) {
      var id = a.getAttribute('href').slice(1);
      return [id, !!d.getElementById(id)];
    }) : null;
    out.charts = [];
    Array.prototype.forEach.call(d.querySelectorAll('.chart'), function (c) {
      var widest = 0;
      Array.prototype.forEach.call(c.querySelectorAll('svg[role="img"]'), function (s) {
        widest = Math.max(widest, s.getBoundingClientRect().width);
      });
      var legends = Array.prototype.map.call(c.querySelectorAll('.legend'), function (l) {
        return l.querySelectorAll('.legend-item').length;
      });
      out.charts.push({id: c.id, svgs: c.querySelectorAll('svg[role="img"]').length,
                       markers: c.querySelectorAll('.roof-pt, .seq-pt').length, legends: legends,
                       widest: widest});
    });
    // The series charts, checked against the page's own data: which points each x axis holds, the
    // lines drawn per panel, the dash pattern of each variant.
    var byKey = {};
    data.points.forEach(function (p) { byKey[p.label + ' | ' + p.kernel] = p; });
    out.series = [];
    Array.prototype.forEach.call(d.querySelectorAll('.chart[data-chart]'), function (c) {
      var chart = data.charts[Number(c.getAttribute('data-chart'))];
      var s = {id: c.id, x: chart.x, seq_q: [], panels: [], dashes: {}};
      Array.prototype.forEach.call(c.querySelectorAll('figure[data-panel]'), function (fig) {
        var panel = {index: Number(fig.getAttribute('data-panel')), points: {}, drawn: []};
        Array.prototype.forEach.call(fig.querySelectorAll('.seq-pt'), function (m) {
          var p = byKey[m.getAttribute('data-key')];
          if (!p) return;
          s.seq_q.push(p.seq_q);
          var line = p.kernel + '|' + p.series.variant;
          (panel.points[line] = panel.points[line] || []).push(p[chart.x]);
        });
        Array.prototype.forEach.call(fig.querySelectorAll('polyline.series'), function (l) {
          var line = l.getAttribute('data-line');
          panel.drawn.push(line);
          var variant = line.slice(line.lastIndexOf('|') + 1);
          (s.dashes[variant] = s.dashes[variant] || []).push(l.getAttribute('stroke-dasharray'));
        });
        s.panels.push(panel);
      });
      out.series.push(s);
    });
    out.verdict_links = [];
    Array.prototype.forEach.call(d.querySelectorAll('a.verdict, a.flag'), function (a) {
      var id = a.getAttribute('href').slice(1);
      if (!d.getElementById(id)) out.verdict_links.push(id);
    });
    out.verdict_link_count = d.querySelectorAll('a.verdict, a.flag').length;
  } catch (e) {
    out.error = String(e);
  }
  return out;
}
function done() {
  var all = {};
  frames.forEach(function (f) { all[f.getAttribute('data-name')] = measure(f); });
  document.body.setAttribute('data-layout', JSON.stringify(all));
}
// The page's load event waits for every frame's.
window.addEventListener('load', function () { setTimeout(done, 300); });
</script></body></html>
"""
FRAME = '<iframe data-name="%(name)s" src="%(src)s" style="width:%(width)dpx;height:900px;border:0;display:block"></iframe>'

# A screenshot of one section: the report framed at the window's size and scrolled to the section.
SHOT_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0}</style></head><body>
<iframe id="f" src="%(src)s" style="width:%(width)dpx;height:%(height)dpx;border:0;display:block"></iframe>
<script>
var f = document.getElementById('f');
f.addEventListener('load', function () {
  var target = f.contentDocument.getElementById('%(section)s');
  if (target) f.contentWindow.scrollTo(0, target.getBoundingClientRect().top - 8);
});
</script></body></html>
"""
# name, frame width, height, the section at the top, the folder in reports/ of the results shown
SHOTS = (("h200-fa-bench-report.png", 1400, 2600, "top", "h200-fa-bench"),
         ("report-roofline.png", 1400, 820, "roofline", "h200-fa-bench"),
         ("report-sweep.png", 1400, 1250, "sweep-prefill", "h200-fa-bench"),
         ("report-comparison.png", 1400, 700, "comparison", "h200-fa-bench"),
         ("report-800px.png", 800, 1400, "roofline", "h200-fa-bench"),
         ("report-decode.png", 1400, 1250, "sweep-decode", "h200-counters"),
         ("report-points.png", 1400, 900, "points", "h200-serving"),
         ("report-points-800px.png", 800, 900, "points", "h200-serving"))


def chromium(browser, args, timeout=300):
    profile = tempfile.mkdtemp(prefix="attnprof-chromium-")
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", "--user-data-dir=" + profile]
    try:
        return subprocess.run(common + args, capture_output=True, text=True, timeout=timeout)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def measure(browser, out_dir, reports, width):
    frames = "\n".join(FRAME % {"name": name, "src": os.path.relpath(html, out_dir), "width": width}
                       for name, html in reports)
    page = os.path.join(out_dir, f"measure-{width}.html")
    with open(page, "w") as f:
        f.write(MEASURE_PAGE % {"frames": frames})
    r = chromium(browser, ["--allow-file-access-from-files", "--enable-logging=stderr", "--v=0",
                           f"--window-size={width + 40},1000", "--virtual-time-budget=30000", "--dump-dom",
                           "file://" + os.path.abspath(page)])
    errors = [l for l in r.stderr.splitlines() if "CONSOLE" in l and ("Uncaught" in l or "rror" in l)]
    m = re.search(r'data-layout="([^"]*)"', r.stdout)
    if not m:
        return None, errors, f"no layout measured at {width} px (exit {r.returncode}): {r.stderr[-1500:]}"
    text = (m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
            .replace("&#39;", "'").replace("&amp;", "&"))
    return json.loads(text), errors, None


def layout_failures(layout, ok_records, width):
    where = f"at {width} px"
    if "error" in layout:
        return [f"{where}: the measuring page could not read the report: {layout['error']}"]
    failures = []
    if layout["render_ok"] != "1":
        failures.append(f"{where}: the page's script did not finish")
    placeable = layout["roof_placeable"]
    if layout["roof_markers"] != placeable or layout["roofline_attr"] != str(placeable):
        failures.append(f"{where}: roofline markers {layout['roof_markers']} (data-roofline-points "
                        f"{layout['roofline_attr']}), ok points with an intensity and a throughput {placeable}")
    if ok_records and not placeable:
        failures.append(f"{where}: none of the {ok_records} ok records has a place on the roofline")
    if layout["scripts"] != 2:
        failures.append(f"{where}: {layout['scripts']} <script> elements: one came from the data")
    if layout["imgs"]:
        failures.append(f"{where}: an <img> element came from the data")
    if layout["scroll_width"] > layout["client_width"]:
        failures.append(f"{where}: the page scrolls sideways ({layout['scroll_width']} > {layout['client_width']} px)")
    for height, text in layout["tallest_rows"]:
        if height > MAX_ROW_PX:
            failures.append(f"{where}: a table row is {height} px tall (over {MAX_ROW_PX}): {text}")
    v = layout.get("verdict")
    if ok_records and v is None:
        failures.append(f"{where}: the points table has no verdict column")
    elif v and (v["left"] < v["box_left"] - 0.5 or v["right"] > min(v["box_right"], v["frame"]) + 0.5):
        failures.append(f"{where}: the verdict column ({v['left']:.0f}-{v['right']:.0f} px) is outside its box "
                        f"({v['box_left']:.0f}-{v['box_right']:.0f} px) or the frame ({v['frame']} px)")
    if not layout["toc"]:
        failures.append(f"{where}: no table of contents")
    else:
        missing = [id for id, found in layout["toc"] if not found]
        if missing:
            failures.append(f"{where}: contents links without a target: {missing}")
    ids = {c["id"] for c in layout["charts"]}
    if "roofline-chart" not in ids:
        failures.append(f"{where}: no roofline chart")
    if ok_records and not layout["series"]:
        failures.append(f"{where}: no series chart")
    for c in layout["charts"]:
        if c["svgs"] == 0 and (ok_records or c["id"] == "roofline-chart"):
            failures.append(f"{where}: chart {c['id']} drew no SVG")
        if ok_records and c["markers"] == 0:
            failures.append(f"{where}: chart {c['id']} has no markers")
        for n in c["legends"]:
            if n > MAX_LEGEND_ENTRIES:
                failures.append(f"{where}: chart {c['id']} has a legend of {n} entries (at most {MAX_LEGEND_ENTRIES})")
        if c["svgs"] and c["widest"] < MIN_CHART_PX:
            failures.append(f"{where}: chart {c['id']} is drawn {c['widest']:.0f} px wide: too small to read")
    for s in layout["series"]:
        decode = [q for q in s["seq_q"] if q <= DECODE_MAX_SEQ_Q]
        if decode and len(decode) < len(s["seq_q"]):
            failures.append(f"{where}: chart {s['id']}: one x axis holds decode (seq_q <= {DECODE_MAX_SEQ_Q}) and "
                            f"prefill points")
        for panel in s["panels"]:
            for line, xs in panel["points"].items():
                if len(set(xs)) < len(xs):
                    failures.append(f"{where}: chart {s['id']} panel {panel['index']}: line {line} has two points "
                                    f"at one {s['x']} ({sorted(xs)})")
                if len(xs) >= 2 and line not in panel["drawn"]:
                    failures.append(f"{where}: chart {s['id']} panel {panel['index']}: line {line} has "
                                    f"{len(xs)} points and no line drawn")
        dash_of = {variant: set(d) for variant, d in s["dashes"].items()}
        for variant, d in dash_of.items():
            if len(d) > 1:
                failures.append(f"{where}: chart {s['id']}: variant {variant} drawn with dashes {sorted(d)}")
        used = [next(iter(d)) for d in dash_of.values() if len(d) == 1]
        if len(set(used)) < len(used):
            failures.append(f"{where}: chart {s['id']}: two variants share a dash pattern ({sorted(used)})")
    if layout["verdict_links"]:
        failures.append(f"{where}: verdict or flag links without a rule: {sorted(set(layout['verdict_links']))}")
    if ok_records and layout["verdict_link_count"] == 0:
        failures.append(f"{where}: no verdict links to a rule")
    return failures


def summary(layout):
    tallest = layout["tallest_rows"][0][0] if layout["tallest_rows"] else 0
    legends = max([n for c in layout["charts"] for n in c["legends"]] or [0])
    lines = sum(len(p["drawn"]) for s in layout["series"] for p in s["panels"])
    return (f"page {layout['scroll_width']}/{layout['client_width']} px, tallest row {tallest} px of "
            f"{layout['rows_measured']}, {len(layout['charts'])} charts, {lines} series lines, largest legend "
            f"{legends}")


def main():
    args = sys.argv[1:]
    shots_dir = None
    if "--shots" in args:
        at = args.index("--shots")
        shots_dir = args[at + 1]
        del args[at:at + 2]
    if len(args) < 3:
        print(__doc__)
        return 2
    binary, build_dir, results_files = args[0], args[1], args[2:]
    browser = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if browser is None:
        print("browser test: no chromium installed (scripts/setup.sh installs it): skipped")
        return 77

    out_dir = os.path.join(build_dir, "report-browser-test")
    os.makedirs(out_dir, exist_ok=True)
    reports, ok_records = [], {}
    for i, results in enumerate(results_files):
        name = f"{i:02d}-{os.path.basename(os.path.dirname(os.path.abspath(results)))}"
        html = os.path.join(out_dir, name, "report.html")
        os.makedirs(os.path.dirname(html), exist_ok=True)
        r = subprocess.run([binary, "report", results, "--html", html, "--quiet"],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            print(f"attnprof report {results} failed:", r.returncode, r.stderr)
            return 1
        with open(results) as f:
            ok_records[name] = sum(1 for rec in json.load(f)["records"] if rec["status"] == "ok")
        reports.append((name, html))

    failures = []
    for width in WIDTHS:
        layouts, errors, error = measure(browser, out_dir, reports, width)
        if errors:
            failures.append(f"console errors at {width} px: " + " | ".join(errors[:5]))
        if error:
            failures.append(error)
            continue
        for name, _ in reports:
            layout = layouts.get(name)
            if layout is None:
                failures.append(f"{name}: not measured at {width} px")
                continue
            failures += [f"{name}: {f}" for f in layout_failures(layout, ok_records[name], width)]
            if "error" not in layout:
                print(f"{name} at {width} px: {summary(layout)}")

    if shots_dir:
        os.makedirs(shots_dir, exist_ok=True)
        for name, width, height, section, folder in SHOTS:
            src = next((os.path.abspath(html) for report, html in reports if report.endswith("-" + folder)), None)
            if src is None:
                failures.append(f"screenshot {name}: the results of reports/{folder} were not given")
                continue
            page = os.path.join(out_dir, f"shot-{name}.html")
            with open(page, "w") as f:
                f.write(SHOT_PAGE % {"src": "file://" + src, "width": width, "height": height, "section": section})
            target = os.path.join(shots_dir, name)
            s = chromium(browser, ["--allow-file-access-from-files", f"--window-size={width},{height}",
                                   "--hide-scrollbars", "--virtual-time-budget=5000", "--screenshot=" + target,
                                   "file://" + os.path.abspath(page)])
            if s.returncode != 0 or not os.path.exists(target):
                failures.append(f"screenshot {name} failed: {s.stderr[-500:]}")

    for f in failures:
        print("FAIL:", f)
    print(f"browser test: {len(reports)} reports at {', '.join(map(str, WIDTHS))} px:",
          "ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
