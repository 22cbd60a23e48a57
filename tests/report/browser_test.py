#!/usr/bin/env python3
"""Renders the synthetic fixture to HTML with the built binary and loads it in headless Chromium.

Passes when the page's script ran to its end (it sets data-render-ok on <body> after drawing; a
JavaScript error leaves it absent), the roofline has one marker per ok record, no console error was
logged, and no markup from the data made it into the DOM. Keeps a screenshot in the build folder.
Exit 77 (skipped) when no Chromium is installed.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def main():
    binary, fixture, build_dir = sys.argv[1:4]
    browser = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if browser is None:
        print("browser test: no chromium installed (scripts/setup.sh installs it): skipped")
        return 77

    out_dir = os.path.join(build_dir, "report-browser-test")
    os.makedirs(out_dir, exist_ok=True)
    html = os.path.join(out_dir, "report.html")
    r = subprocess.run([binary, "report", fixture, "--html", html, "--quiet"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        print("attnprof report failed:", r.returncode, r.stderr)
        return 1
    with open(fixture) as f:
        ok_records = sum(1 for rec in json.load(f)["records"] if rec["status"] == "ok")

    url = "file://" + os.path.abspath(html)
    profile = tempfile.mkdtemp(prefix="attnprof-chromium-")
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
              "--disable-dev-shm-usage", "--user-data-dir=" + profile]
    try:
        dom = subprocess.run(common + ["--enable-logging=stderr", "--v=0",
                                       "--virtual-time-budget=5000", "--dump-dom", url],
                             capture_output=True, text=True, timeout=180)
        screenshot = os.path.join(build_dir, "report-screenshot.png")
        shot = subprocess.run(common + ["--window-size=1280,2400", "--hide-scrollbars",
                                        "--virtual-time-budget=5000", "--screenshot=" + screenshot,
                                        url],
                              capture_output=True, text=True, timeout=180)
    finally:
        shutil.rmtree(profile, ignore_errors=True)

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
        if len(re.findall(r'class="seq-pt"', text)) == 0:
            failures.append("no points in the sequence-length charts")
    errors = [l for l in dom.stderr.splitlines()
              if "CONSOLE" in l and ("Uncaught" in l or "rror" in l)]
    if errors:
        failures.append("console errors: " + " | ".join(errors[:5]))
    if shot.returncode != 0 or not os.path.exists(screenshot) or os.path.getsize(screenshot) == 0:
        failures.append(f"no screenshot (exit {shot.returncode}): {shot.stderr[-1000:]}")

    for f in failures:
        print("FAIL:", f)
    print(f"browser test: {ok_records} ok records; screenshot {screenshot}:",
          "ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
