#!/usr/bin/env python3
"""README.md's and docs/*.md's attnprof command lines run as written, on a machine without a GPU.

Every line of a ```bash (or ```sh) fence that runs attnprof (`attnprof ...`, `build/attnprof ...`,
`build-cpu/attnprof ...`, continuation lines joined) is run with bash in a scratch folder of its page's
own (so one page's outputs feed its later lines, as a reader would run them), against the built binary,
and must exit as the page says: 0, or the code a trailing `# exit N` comment gives. What it needs is
made first, the same for every page (SETUP below): results files under the names the pages use, a
history of runs, the shards of one sweep, and docs/plugins.md's CPU plugin built with the page's own
command. Then:

- SUBSTITUTIONS resolve placeholders (a file name the page leaves to the reader, a system path) and
  shrink what would take hours on a CPU (a big preset or axes) to a tiny sweep, each with its reason;
- a synopsis line (docs/cli.md's `attnprof devices [--json]`) runs in its shortest form: every
  `[...]` group and a bare `...` dropped;
- every sweep gets fast sampling options it does not set (FAST_SAMPLING), so that the whole test runs
  in about a minute on two cores;
- SKIPPED lists each line that cannot run without a GPU (or without what a GPU line made), by page
  and a text of the line, with the reason. An entry that matches no line fails the test, as does a
  runnable line that is in no list and fails: a page's new command is run, or listed here with why not.

usage: docs_commands_test.py ATTNPROF SOURCE_DIR WORK_DIR
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

# Lines that need what this machine lacks, by page and a text the line contains.
SKIPPED = [
    ("README.md", "build/attnprof calibrate", "calibrate's probes are CUDA kernels: it needs an NVIDIA GPU"),
    ("docs/PERFORMANCE.md", "attnprof sweep", "the H200 measurements: CUDA kernels (fused-sm90, decode) and "
     "PyTorch's through the Python bridge, on a GPU"),
    ("docs/ci-gate.md", "--kernels fused,fused-sm90 --out rerun", "fused-sm90 is a CUDA kernel"),
    ("docs/ci-gate.md", "--confirm rerun/results.json", "its input is the GPU sweep's output above"),
    ("docs/cli.md", "attnprof calibrate", "calibrate's probes are CUDA kernels: it needs an NVIDIA GPU"),
    ("docs/plugins.md", "./my_attention.so", "the CUDA plugin: built with nvcc and swept on a GPU "
     "(plugins_docs_example builds and lists it where nvcc is installed)"),
    ("docs/plugins.md", "./candidate.so", "the CUDA plugin's candidate build: nvcc and a GPU"),
    ("docs/plugins.md", "attnprof compare runs/base/results.json runs/cand/results.json",
     "its inputs are the two GPU sweeps of the CUDA plugin above"),
    ("docs/python.md", "attnprof sweep", "PyTorch's kernels (torch:flash, torch:cudnn) and fused-sm90 need a GPU"),
    ("docs/why.md", "attnprof sweep --stalls", "warp-state sampling, fused-sm90 and torch:cudnn need a GPU "
     "(tests/cli/test_sweep.sh runs --stalls on the CPU backend)"),
    ("docs/why.md", "attnprof sweep --timeline", "PM sampling, fused-sm90 and decode need a GPU "
     "(tests/cli/test_sweep.sh runs --timeline on the CPU backend)"),
]

# A sweep small enough for two cores: two shapes, each point a few milliseconds.
TINY_AXES = "batch=1;heads=2;seq=64,96;hdim=32;causal=0,1;dtype=fp32"

# (text in a line, its replacement, why). Applied in order to every runnable line.
SUBSTITUTIONS = [
    # Presets and axes sized for a GPU: fa-bench's 48 shapes at up to 16k tokens, or the README's 72
    # points up to seq 16384, take hours on a CPU. The line's other options stay.
    ('--preset fa-bench', f'--axes "{TINY_AXES}"', "fa-bench's shapes take hours on a CPU"),
    ('--axes "batch=1,4;heads=16;seq=512:16384:x2;hdim=64,128;causal=0,1;dtype=bf16,fp16"', f'--axes "{TINY_AXES}"',
     "the README's example axes reach seq 16384: hours on a CPU"),
    # File names a page leaves to the reader (SETUP makes each), and paths outside the scratch folder.
    ("RUN.json RUN.json [RUN.json...]", "runs/2026-11-20/results.json runs/2026-11-21/results.json",
     "docs/cli.md's synopsis: two runs of a history"),
    ("kernels --plugin mine.so", "kernels --plugin ./my_cpu_attention.so", "the README's plugin: docs/plugins.md's CPU one"),
    ("/var/lib/node_exporter/textfile/attnprof.prom", "node_exporter.prom",
     "the node exporter's folder is the system's, not the test's"),
]

# Sampling options every sweep line gets unless it sets them: a few samples per point, not seconds.
FAST_SAMPLING = [("--max-seconds", "0.02"), ("--min-samples", "3"), ("--max-samples", "5"), ("--warmup", "1")]

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
COMMAND = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=\S+\s+)*(?:build(?:-cpu)?/)?attnprof\s")
EXIT_COMMENT = re.compile(r"#\s*exit (\d+)")


def command_lines(text):
    """(line, expected exit code) for each attnprof line of the page's bash fences."""
    out = []
    for fence in FENCE.finditer(text):
        if fence.group(1) not in ("bash", "sh", "shell"):
            continue
        joined, pending = [], ""
        for raw in fence.group(2).splitlines():
            if raw.rstrip().endswith("\\"):
                pending += raw.rstrip()[:-1].rstrip() + " "
                continue
            joined.append(pending + raw.strip())
            pending = ""
        for line in joined:
            if not COMMAND.match(line):
                continue
            expected = EXIT_COMMENT.search(line)
            out.append((line, int(expected.group(1)) if expected else 0))
    return out


def strip_comment(line):
    """The line without its trailing comment (a # outside quotes that starts a word)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def runnable(line):
    """The line as run: substitutions, then a synopsis' optional parts dropped, fast sampling added."""
    for text, replacement, _ in SUBSTITUTIONS:
        line = line.replace(text, replacement)
    line = re.sub(r"\s*\[[^\]]*\]", "", strip_comment(line))
    line = re.sub(r"\s+\.\.\.(?=\s|$)", "", line)
    if re.search(r"(?:^|/)attnprof sweep\b", line):
        for option, value in FAST_SAMPLING:
            if option not in line.split():
                line += f" {option} {value}"
    return line


def run(cmd, cwd, env, timeout=120):
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def setup(attnprof, source, base, env):
    """Files the pages' lines read, under their names, in `base` (copied into each page's folder)."""
    base.mkdir(parents=True)
    fixtures = source / "tests/gate/fixtures"
    # A results file that compares equal with itself (exit 0) and one of the same points slower.
    same = fixtures / "run_1.json"
    for name in ("baseline.json", "candidate.json", "base.json", "rerun.json", "results.json"):
        shutil.copy(same, base / name)
    shutil.copy(fixtures / "run_3.json", base / "cand.json")
    # The H200 warp-state sweep the why pages read (reports/h200-stalls/results.json), at its own path.
    (base / "reports/h200-stalls").mkdir(parents=True)
    shutil.copy(source / "reports/h200-stalls/results.json", base / "reports/h200-stalls/results.json")
    # A history: runs/<date>/results.json (docs/ci-gate.md's runs/2026-11-2*/results.json).
    for day, n in (("20", 1), ("21", 2)):
        (base / f"runs/2026-11-{day}").mkdir(parents=True)
        shutil.copy(fixtures / f"run_{n}.json", base / f"runs/2026-11-{day}/results.json")
    # The two shards of one tiny CPU sweep, as shard1.json / shard2.json and shard-K/results.json.
    for k in (1, 2):
        done = run(f'"{attnprof}" sweep --backend cpu --kernels fused --axes "{TINY_AXES}" --shard {k}/2 '
                   f'--out shard-{k} ' + " ".join(f"{o} {v}" for o, v in FAST_SAMPLING), base, env)
        if done.returncode != 0:
            raise SystemExit(f"setup: shard {k}/2: {done.stderr}")
        shutil.copy(base / f"shard-{k}/results.json", base / f"shard{k}.json")
    # docs/plugins.md's CPU plugin, built with the page's own command.
    built = subprocess.run([sys.executable, str(source / "scripts/device/docs_plugin.py"), str(source / "docs/plugins.md"),
                            str(base / "plugin"), "cpu-"], capture_output=True, text=True)
    if built.returncode != 0:
        raise SystemExit(f"setup: extracting the CPU plugin: {built.stderr}")
    done = run("bash build.sh", base / "plugin", dict(env, ATTNPROF=str(source)))
    if done.returncode != 0:
        raise SystemExit(f"setup: building the CPU plugin: {done.stderr}")
    shutil.copy(base / "plugin/my_cpu_attention.so", base / "my_cpu_attention.so")


def main():
    attnprof = pathlib.Path(sys.argv[1]).resolve()
    source = pathlib.Path(sys.argv[2]).resolve()
    work = pathlib.Path(sys.argv[3]).resolve()
    if shutil.which("cc") is None:
        print("no cc to build docs/plugins.md's CPU plugin: skipped")
        sys.exit(77)
    shutil.rmtree(work, ignore_errors=True)
    # `attnprof`, `build/attnprof` and `build-cpu/attnprof` all name the binary under test.
    bin_dir = work / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "attnprof").symlink_to(attnprof)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ.get('PATH', '')}", ATTNPROF_CACHE_DIR=str(work / "cache"))
    started = time.monotonic()
    setup(attnprof, source, work / "setup", env)

    pages = [source / "README.md"] + sorted((source / "docs").glob("*.md"))
    used = set()
    failures, ran, skipped = [], 0, 0
    for page in pages:
        rel = page.relative_to(source).as_posix()
        lines = command_lines(page.read_text())
        if not lines:
            continue
        cwd = work / "pages" / rel.replace("/", "_")
        shutil.copytree(work / "setup", cwd)
        for build in ("build", "build-cpu"):
            (cwd / build).mkdir()
            (cwd / build / "attnprof").symlink_to(attnprof)
        for line, expected in lines:
            skip = next((i for i, (p, text, _) in enumerate(SKIPPED) if p == rel and text in line), None)
            if skip is not None:
                used.add(skip)
                skipped += 1
                print(f"skip {rel}: {line[:100]} ({SKIPPED[skip][2]})")
                continue
            cmd = runnable(line)
            done = run(cmd, cwd, env)
            ran += 1
            status = "ok" if done.returncode == expected else f"FAIL (exit {done.returncode}, want {expected})"
            print(f"{status} {rel}: {cmd}")
            if done.returncode != expected:
                failures.append(f"{rel}: {line}\n  ran: {cmd}\n  exit {done.returncode}, want {expected}\n"
                                f"  stderr: {done.stderr.strip()[-800:]}")
    for i, (page, text, reason) in enumerate(SKIPPED):
        if i not in used:
            failures.append(f"SKIPPED entry matches no line: {page}: {text!r} ({reason})")
    print(f"{ran} lines ran, {skipped} skipped, {len(failures)} failed, {time.monotonic() - started:.0f} s")
    if ran == 0:
        failures.append("no line ran: the fences were not found")
    if failures:
        print("\n".join(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
