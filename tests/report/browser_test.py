#!/usr/bin/env python3
"""Renders a results file to HTML with the built binary and loads it in headless Chromium.

Passes when the page's script ran to its end (it sets data-render-ok on <body> after drawing; a
JavaScript error leaves it absent), the roofline has one marker per ok record, no console error was
logged, and no markup from the data made it into the DOM. Then measures the layout the way a reader
meets it, in a frame of 1400 px and one of 800 px: no table row taller than 150 px, no sideways
scroll of the page, every chart drawn (an SVG with markers in each), every chart's legends under 30
entries, and a rule for every verdict link. Keeps screenshots in the build folder.
Exit 77 (skipped) when no Chromium is installed.

usage: browser_test.py ATTNPROF RESULTS.json BUILD_DIR [--shots DIR]
  --shots DIR: also write the screenshots the docs show (docs/img) into DIR.
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
MAX_LEGEND_ENTRIES = 30
WIDTHS = (1400, 800)

# Loaded next to the report: frames it at a given width, measures, and writes what it found into
# <body data-layout="..."> for --dump-dom to return. Reading the frame's document needs
# --allow-file-access-from-files (both are file:// pages).
MEASURE_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<iframe id="f" src="report.html" style="width:%(width)dpx;height:900px;border:0"></iframe>
<script>
var f = document.getElementById('f');
f.addEventListener('load', function () {
  setTimeout(function () {
    var out = {};
    try {
      var d = f.contentDocument, root = d.documentElement;
      out.render_ok = d.body.getAttribute('data-render-ok');
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
      out.charts = [];
      Array.prototype.forEach.call(d.querySelectorAll('.chart'), function (c) {
        var markers = c.querySelectorAll('.roof-pt, .seq-pt').length;
        var svgs = c.querySelectorAll('svg[role="img"]').length;
        var widest = 0;
        Array.prototype.forEach.call(c.querySelectorAll('svg[role="img"]'), function (s) {
          widest = Math.max(widest, s.getBoundingClientRect().width);
        });
        out.charts.push({id: c.id, svgs: svgs, markers: markers, legend_entries: c.querySelectorAll('.legend > span:not(.title)').length,
                         smallest_width: widest});
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
    document.body.setAttribute('data-layout', JSON.stringify(out));
  }, 300);
});
</script></body></html>
"""


# A screenshot of one section: the report framed at the window's size and scrolled to the section.
SHOT_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0}</style></head><body>
<iframe id="f" src="report.html" style="width:%(width)dpx;height:%(height)dpx;border:0;display:block"></iframe>
<script>
var f = document.getElementById('f');
f.addEventListener('load', function () {
  var target = f.contentDocument.getElementById('%(section)s');
  if (target) f.contentWindow.scrollTo(0, target.getBoundingClientRect().top - 8);
});
</script></body></html>
"""


def chromium(browser, args, timeout=180):
    profile = tempfile.mkdtemp(prefix="attnprof-chromium-")
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", "--user-data-dir=" + profile]
    try:
        return subprocess.run(common + args, capture_output=True, text=True, timeout=timeout)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def measure(browser, out_dir, width):
    page = os.path.join(out_dir, f"measure-{width}.html")
    with open(page, "w") as f:
        f.write(MEASURE_PAGE % {"width": width})
    r = chromium(browser, ["--allow-file-access-from-files", f"--window-size={width + 40},1000",
                           "--virtual-time-budget=8000", "--dump-dom", "file://" + os.path.abspath(page)])
    m = re.search(r'data-layout="([^"]*)"', r.stdout)
    if not m:
        return None, f"no layout measured at {width} px (exit {r.returncode}): {r.stderr[-1500:]}"
    text = (m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
            .replace("&#39;", "'").replace("&amp;", "&"))
    return json.loads(text), None


def layout_failures(layout, width, has_ok):
    failures = []
    where = f"at {width} px"
    if "error" in layout:
        return [f"{where}: the measuring page could not read the report: {layout['error']}"]
    if layout.get("render_ok") != "1":
        failures.append(f"{where}: the page's script did not finish")
    if layout["scroll_width"] > layout["client_width"]:
        failures.append(f"{where}: the page scrolls sideways ({layout['scroll_width']} > {layout['client_width']} px)")
    for height, text in layout["tallest_rows"]:
        if height > MAX_ROW_PX:
            failures.append(f"{where}: a table row is {height} px tall (over {MAX_ROW_PX}): {text}")
    ids = {c["id"] for c in layout["charts"]}
    for expected in ("roofline-chart", "tflops-chart", "latency-chart"):
        if expected not in ids:
            failures.append(f"{where}: no chart {expected}")
    for c in layout["charts"]:
        if c["svgs"] == 0:
            failures.append(f"{where}: chart {c['id']} drew no SVG")
        if has_ok and c["markers"] == 0:
            failures.append(f"{where}: chart {c['id']} has no markers")
        if c["legend_entries"] >= MAX_LEGEND_ENTRIES:
            failures.append(f"{where}: chart {c['id']} has {c['legend_entries']} legend entries "
                            f"(at most {MAX_LEGEND_ENTRIES - 1})")
        if c["svgs"] and c["smallest_width"] < 250:
            failures.append(f"{where}: chart {c['id']} is drawn {c['smallest_width']:.0f} px wide: too small to read")
    if layout["verdict_links"]:
        failures.append(f"{where}: verdict or flag links without a rule: {sorted(set(layout['verdict_links']))}")
    if has_ok and layout["verdict_link_count"] == 0:
        failures.append(f"{where}: no verdict links to a rule")
    return failures


def main():
    args = sys.argv[1:]
    shots_dir = None
    if "--shots" in args:
        at = args.index("--shots")
        shots_dir = args[at + 1]
        del args[at:at + 2]
    binary, results, build_dir = args[:3]
    browser = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if browser is None:
        print("browser test: no chromium installed (scripts/setup.sh installs it): skipped")
        return 77

    out_dir = os.path.join(build_dir, "report-browser-test")
    os.makedirs(out_dir, exist_ok=True)
    html = os.path.join(out_dir, "report.html")
    r = subprocess.run([binary, "report", results, "--html", html, "--quiet"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        print("attnprof report failed:", r.returncode, r.stderr)
        return 1
    with open(results) as f:
        ok_records = sum(1 for rec in json.load(f)["records"] if rec["status"] == "ok")

    url = "file://" + os.path.abspath(html)
    dom = chromium(browser, ["--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--dump-dom", url])
    screenshot = os.path.join(build_dir, "report-screenshot.png")
    shot = chromium(browser, ["--window-size=1280,2400", "--hide-scrollbars", "--virtual-time-budget=5000",
                              "--screenshot=" + screenshot, url])

    failures = []
    text = dom.stdout
    with open(os.path.join(out_dir, "dom.html"), "w") as f:
        f.write(text)
    with open(os.path.join(out_dir, "chromium.log"), "w") as f:
        f.write(dom.stderr)
    body = re.search(r"<body[^>]*>", text)
    if dom.returncode != 0 or body is None:
        failures.append(f"chromium --dump-dom failed (exit {dom.returncode}): {dom.stderr[-2000:]}")
    else:
        if 'data-render-ok="1"' not in body.group(0):
            failures.append("the page's script did not finish (no data-render-ok on <body>)")
        drawn = len(re.findall(r'class="roof-pt"', text))
        if drawn != ok_records:
            failures.append(f"roofline markers: {drawn}, ok records: {ok_records}")
        if f'data-roofline-points="{ok_records}"' not in body.group(0):
            failures.append("data-roofline-points on <body> does not match the ok records")
        if len(re.findall(r"<script", text)) != 2:
            failures.append("a <script> element came from the data")
        if "<img" in text:
            failures.append("an <img> element came from the data")
        if ok_records and len(re.findall(r'class="seq-pt"', text)) == 0:
            failures.append("no points in the sequence-length charts")
    errors = [l for l in dom.stderr.splitlines()
              if "CONSOLE" in l and ("Uncaught" in l or "rror" in l)]
    if errors:
        failures.append("console errors: " + " | ".join(errors[:5]))
    if shot.returncode != 0 or not os.path.exists(screenshot) or os.path.getsize(screenshot) == 0:
        failures.append(f"no screenshot (exit {shot.returncode}): {shot.stderr[-1000:]}")

    for width in WIDTHS:
        layout, error = measure(browser, out_dir, width)
        if error:
            failures.append(error)
            continue
        failures += layout_failures(layout, width, ok_records > 0)
        tallest = layout["tallest_rows"][0][0] if layout["tallest_rows"] else 0
        print(f"layout at {width} px: page {layout['scroll_width']}/{layout['client_width']} px wide, tallest row "
              f"{tallest} px of {layout['rows_measured']}, charts " +
              ", ".join(f"{c['id']} {c['svgs']} svg/{c['markers']} markers/{c['legend_entries']} legend"
                        for c in layout["charts"]))

    if shots_dir:
        os.makedirs(shots_dir, exist_ok=True)
        for name, width, height, section in (("h200-fa-bench-report.png", 1400, 2600, "top"),
                                             ("report-roofline.png", 1400, 820, "roofline"),
                                             ("report-sweep.png", 1400, 1500, "sweep"),
                                             ("report-comparison.png", 1400, 700, "comparison"),
                                             ("report-800px.png", 800, 1400, "roofline")):
            page = os.path.join(out_dir, f"shot-{name}.html")
            with open(page, "w") as f:
                f.write(SHOT_PAGE % {"width": width, "height": height, "section": section})
            target = os.path.join(shots_dir, name)
            s = chromium(browser, ["--allow-file-access-from-files", f"--window-size={width},{height}",
                                   "--hide-scrollbars", "--virtual-time-budget=5000", "--screenshot=" + target,
                                   "file://" + os.path.abspath(page)])
            if s.returncode != 0 or not os.path.exists(target):
                failures.append(f"screenshot {name} failed: {s.stderr[-500:]}")

    for f in failures:
        print("FAIL:", f)
    print(f"browser test: {ok_records} ok records; screenshot {screenshot}:",
          "ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
