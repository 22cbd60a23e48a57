#!/usr/bin/env python3
"""tests/ mirrors src/ and kernels/ file for file.

The rule, both ways:
  src/<dir>/<name>.cpp|.cu|.py      is tested by  tests/<dir>/test_<name>.cpp|.cu|.sh|.py
  kernels/<dir>/<name>.cpp|.cu|.py  is tested by  tests/kernels/<dir>/test_<name>.cpp|.cu|.sh|.py
and every tests/.../test_<name>.* names a source file that exists: <name>.cpp|.cu|.py|.hpp|.cuh in the
mirrored folder (a header holding logic, such as a tile heuristic, may have a test of its own).

Only files named test_* are mirror tests. Other tests are named for what they do (hostile_test.sh,
history_test.py) and are not judged; nor are shared helpers (catch_main.cpp, *_support.hpp, lib.sh).
Folders that mirror nothing are skipped whole: tests/architecture (this checker and its fixtures),
tests/fuzz, tests/bench, tests/plugins (plugins under test, not tests of a source file),
tests/scripts (tests of scripts/), tests/gpu (the GPU correctness tests that predate the mirror) and
every fixtures/, golden/ and seeds/ folder.

usage: mirror_test.py SOURCE_DIR   prints one line per missing or orphaned test and exits 1 when there
                                   is one, 0 otherwise; then checks itself on a made-up tree.
"""
import os
import sys
import tempfile

SOURCE_SUFFIXES = (".cpp", ".cu", ".py")
TEST_SUFFIXES = (".cpp", ".cu", ".sh", ".py")
HEADER_SUFFIXES = (".hpp", ".cuh")
SKIPPED_TEST_FOLDERS = {"architecture", "fuzz", "bench", "plugins", "scripts", "gpu"}
SKIPPED_FOLDER_NAMES = {"fixtures", "golden", "seeds"}

# Source files that need no test of their own, each with the reason.
EXEMPT = {
    "src/core/version.cpp": "the build's version strings, generated values and no logic",
    "kernels/python/bridge.cpp": "a plugin library (CPython embedded) loaded by attnprof, not linked into it: "
    "tested end to end by tests/plugins/python_test.sh and python_gpu_test.sh",
    **{f"kernels/fused/fused_d{d}.cu": "one explicit instantiation of fused.cu's kernel per head dim: "
       "tested by tests/kernels/fused/test_fused.cpp" for d in (32, 64, 96, 128, 192, 256)},
    **{f"kernels/fused_sm90/fused_sm90_d{d}.cu": "one explicit instantiation of fused_sm90.cu's kernel per "
       "head dim: tested by tests/kernels/fused_sm90/test_fused_sm90.cpp" for d in (64, 128, 192, 256)},
    "kernels/fused_sm90/fused_sm90_vt.cu": "fused-sm90's first launch of an fp8 call (V^T): tested through those "
    "calls by tests/gpu/test_gpu_kernels.cpp, its key order by tests/core/tiles/test_fused_sm90_tiles.cpp",
    **{f"kernels/fused/fused_bwd_d{d}.cu": "one explicit instantiation of fused_bwd_kernel.cuh's kernels per "
       "head dim: tested by tests/kernels/fused/test_fused_bwd_kernel.cpp" for d in (64, 128)},
}

# Test files kept under another name, source -> test: each entry covers both directions. None today.
RENAME_PENDING = {}


def mirror_folder(source_folder):
    """tests/ folder of a source folder: src/core -> tests/core, kernels/cpu -> tests/kernels/cpu."""
    parts = source_folder.split("/")
    if parts[0] == "src":
        return "/".join(["tests"] + parts[1:])
    return "/".join(["tests"] + parts)


def source_folder(test_folder):
    """The inverse of mirror_folder: tests/kernels/cpu -> kernels/cpu, tests/core -> src/core."""
    parts = test_folder.split("/")[1:]
    if parts and parts[0] == "kernels":
        return "/".join(parts)
    return "/".join(["src"] + parts)


def walk(root, top):
    """Paths relative to root of every file under root/top, sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
        dirnames.sort()
        for name in filenames:
            found.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    return sorted(found)


def skipped_test(rel):
    parts = rel.split("/")
    return (len(parts) > 2 and parts[1] in SKIPPED_TEST_FOLDERS) or any(p in SKIPPED_FOLDER_NAMES for p in parts)


def problems(root, exempt=None, pending=None):
    """(missing, orphaned, stale): lines naming each source file without its test, each test file
    without its source, each exception that no longer applies."""
    exempt = EXEMPT if exempt is None else exempt
    pending = RENAME_PENDING if pending is None else pending
    files = set(walk(root, "src") + walk(root, "kernels"))
    tests = [t for t in walk(root, "tests") if not skipped_test(t)]
    test_stems = {}  # (folder, stem) -> test files
    for t in tests:
        folder, name = t.rsplit("/", 1)
        stem, ext = os.path.splitext(name)
        if stem.startswith("test_") and ext in TEST_SUFFIXES:
            test_stems.setdefault((folder, stem[len("test_"):]), []).append(t)

    missing, orphaned, stale = [], [], []
    pending_tests = set(pending.values())
    for src in sorted(f for f in files if f.endswith(SOURCE_SUFFIXES)):
        folder, name = src.rsplit("/", 1)
        stem = os.path.splitext(name)[0]
        want = mirror_folder(folder)
        has = (want, stem) in test_stems or (src in pending and os.path.exists(os.path.join(root, pending[src])))
        if src in exempt:
            if has:
                stale.append(f"{src}: exempt, but {want}/test_{stem}.* exists: remove it from EXEMPT")
            continue
        if not has:
            missing.append(f"{src}: no {want}/test_{stem}.*")
    for (folder, stem), paths in sorted(test_stems.items()):
        base = source_folder(folder)
        if any(f"{base}/{stem}{ext}" in files for ext in SOURCE_SUFFIXES + HEADER_SUFFIXES):
            continue
        for t in paths:
            if t not in pending_tests:
                orphaned.append(f"{t}: no {base}/{stem}.cpp|.cu|.py|.hpp|.cuh")
    for src in sorted(exempt):
        if src not in files:
            stale.append(f"{src}: exempt, but gone: remove it from EXEMPT")
    for src, test in sorted(pending.items()):
        if src not in files or not os.path.exists(os.path.join(root, test)):
            stale.append(f"{src}: its pending rename {test} no longer applies: remove it from RENAME_PENDING")
    return missing, orphaned, stale


def check_tree(root):
    missing, orphaned, stale = problems(root)
    for line in missing + orphaned + stale:
        print(line)
    if missing or orphaned or stale:
        print(f"mirror: {len(missing)} source files without their test, {len(orphaned)} tests without their "
              f"source, {len(stale)} stale exceptions (rule: src/<dir>/<name>.cpp -> tests/<dir>/test_<name>.*, "
              f"kernels/<dir>/<name>.cu -> tests/kernels/<dir>/test_<name>.*)")
        return 1
    sources = sum(1 for f in walk(root, "src") + walk(root, "kernels") if f.endswith(SOURCE_SUFFIXES))
    print(f"mirror: ok ({sources} source files, {len(EXEMPT)} exempt, {len(RENAME_PENDING)} renames pending)")
    return 0


def self_test():
    """The checker on a made-up tree: each planted problem found, and nothing else."""
    failures = []
    with tempfile.TemporaryDirectory() as root:
        for rel in ["src/core/a.cpp", "src/core/b.cpp", "src/core/h.hpp", "src/measure/cuda/t.cu",
                    "kernels/cpu/k.cpp", "kernels/top.cpp", "kernels/fused/gen.cu", "src/gate/old.cpp",
                    "tests/core/test_a.cpp", "tests/core/test_h.cpp", "tests/core/test_gone.cpp",
                    "tests/core/helper_test.sh", "tests/core/fixtures/test_x.json", "tests/fuzz/test_y.cpp",
                    "tests/measure/cuda/test_t.cu", "tests/kernels/cpu/test_k.sh", "tests/kernels/test_top.py",
                    "tests/gate/test_gate_old.cpp", "tests/kernels/test_k.cpp", "kernels/python/m.py",
                    "tests/kernels/python/test_m.py", "kernels/python/n.py"]:
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            open(os.path.join(root, rel), "w").close()
        missing, orphaned, stale = problems(root, {"kernels/fused/gen.cu": "x", "src/core/c.cpp": "x"},
                                            {"src/gate/old.cpp": "tests/gate/test_gate_old.cpp"})
        if missing != ["kernels/python/n.py: no tests/kernels/python/test_n.*",
                       "src/core/b.cpp: no tests/core/test_b.*"]:
            failures.append(f"missing: {missing}")
        if orphaned != ["tests/core/test_gone.cpp: no src/core/gone.cpp|.cu|.py|.hpp|.cuh",
                        "tests/kernels/test_k.cpp: no kernels/k.cpp|.cu|.py|.hpp|.cuh"]:
            failures.append(f"orphaned: {orphaned}")
        if stale != ["src/core/c.cpp: exempt, but gone: remove it from EXEMPT"]:
            failures.append(f"stale: {stale}")
    return failures


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rc = check_tree(argv[1])
    failures = self_test()
    for f in failures:
        print("FAIL (the checker itself):", f)
    return 1 if failures else rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
