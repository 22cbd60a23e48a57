#!/usr/bin/env python3
"""check_include_graph.py: the source tree passes; on fixture trees, a clean one passes and each
planted violation is found (and nothing else), an allowed exception that no longer occurs fails.

usage: include_graph_test.py SOURCE_DIR
"""
import contextlib
import io
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_include_graph as graph  # noqa: E402

failures = []


def check(cond, message):
    if not cond:
        failures.append(message)


def run_main(root):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = graph.main(["check_include_graph.py", root])
    return rc, out.getvalue()


def main():
    source_dir = sys.argv[1]
    rc, out = run_main(source_dir)
    check(rc == 0, f"the source tree breaks the include graph:\n{out}")

    clean = os.path.join(HERE, "fixtures", "clean")
    found, unused = graph.violations(clean)
    check(found == [] and unused == set(), f"clean fixture: {found} {unused}")

    violating = os.path.join(HERE, "fixtures", "violating")
    found, _ = graph.violations(violating)
    got = {(rel, stage, target) for rel, _, stage, target in found}
    want = {
        ("src/core/bad.hpp", "core", "measure/m.hpp"),      # a stage includes a later one
        ("src/report/peer.cpp", "report", "gate/g.hpp"),    # peers include neither each other ...
        ("src/gate/g.cpp", "gate", "report/p.hpp"),         # ... way round
        ("kernels/fused/k.cu", "kernels", "run/r.hpp"),     # kernels include core and kernels only
        ("src/run/r.cpp", "run", "cli/c.hpp"),
        ("src/run/device_count.cpp", "run", "<cuda_runtime_api.h>"),  # the CUDA runtime after measure
    }
    check(got == want, f"violating fixture: found {sorted(got)}, want {sorted(want)}")
    line_of = {(rel, target): number for rel, number, _, target in found}
    check(line_of.get(("src/report/peer.cpp", "gate/g.hpp")) == 3, f"line numbers: {line_of}")
    rc, out = run_main(violating)
    check(rc == 1 and 'src/core/bad.hpp:3: core includes "measure/m.hpp"' in out, f"exit {rc}, output {out!r}")

    # An allowed exception is matched exactly, and one that no longer occurs is reported.
    pairs = {("src/core/bad.hpp", "measure/m.hpp"), ("src/core/bad.hpp", "run/gone.hpp")}
    found, unused = graph.violations(violating, pairs)
    check(("src/core/bad.hpp", 3, "core", "measure/m.hpp") not in found, "an allowed pair was reported")
    check(unused == {("src/core/bad.hpp", "run/gone.hpp")}, f"unused allowed pairs: {unused}")

    for f in failures:
        print("FAIL:", f)
    print("include graph test:", "FAILED" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
