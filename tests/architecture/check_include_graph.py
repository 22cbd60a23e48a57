#!/usr/bin/env python3
"""The include graph is the pipeline: no file of a stage includes a file of a later stage.

    core < kernels < measure < run < (report, gate) < cli

A file under src/<stage>/ or kernels/ may include its own stage and the stages before it; report and
gate are peers and include neither each other. kernels/ may include core/ and kernels/ only.
include/attnprof/ (the plugin ABI, plain C) may be included from anywhere. Quoted includes of a project
folder are judged ("core/results.hpp"); of system headers, only the CUDA toolkit's (<cuda_runtime.h>,
<cupti*.h>, <cublas*.h>, <cudnn*.h>, <nvtx3/...>): kernels and measure may include them, no other stage
(everything after measure works from a results file on a machine without a GPU).

usage: check_include_graph.py ROOT   prints each violation as FILE:LINE: STAGE includes "PATH"
                                     (a later stage) and exits 1 when there is one, 0 otherwise.
"""
import os
import re
import sys

LEVEL = {"core": 0, "kernels": 1, "measure": 2, "run": 3, "report": 4, "gate": 4, "cli": 5}
ANYWHERE = {"attnprof"}  # include/attnprof/: the plugin ABI header, no dependencies
SOURCE_SUFFIXES = (".cpp", ".hpp", ".cu", ".cuh", ".h", ".c")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
CUDA_INCLUDE = re.compile(r'^\s*#\s*include\s+<((?:cuda|cupti|cublas|cudnn|nvtx)[^>]*)>')
CUDA_STAGES = {"kernels", "measure"}  # the stages that may include the CUDA toolkit's headers

# Known violations, each (file, included header) with the reason it is not fixed yet; none today. An
# entry that no longer occurs fails the check too, so the list only shrinks.
ALLOWED = set()


def stage_of(rel_path):
    """The stage of a file under ROOT (src/<stage>/... or kernels/...), or None."""
    parts = rel_path.split("/")
    if parts[0] == "kernels":
        return "kernels"
    if parts[0] == "src" and len(parts) > 2 and parts[1] in LEVEL:
        return parts[1]
    return None


def allowed(from_stage, to_stage):
    if to_stage in ANYWHERE or to_stage == from_stage:
        return True
    if to_stage not in LEVEL:
        return True  # not a project folder: a third-party or generated header
    return LEVEL[to_stage] < LEVEL[from_stage]


def violations(root, allowed_pairs=frozenset()):
    """(violations, unused allowed pairs): each violation is (file, line, stage, included path)."""
    found, used = [], set()
    for top in ("src", "kernels"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                stage = stage_of(rel)
                if stage is None:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        cuda = CUDA_INCLUDE.match(line)
                        if cuda and stage not in CUDA_STAGES:
                            found.append((rel, number, stage, f"<{cuda.group(1)}>"))
                            continue
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        to_stage = target.split("/")[0] if "/" in target else stage
                        if allowed(stage, to_stage):
                            continue
                        if (rel, target) in allowed_pairs:
                            used.add((rel, target))
                            continue
                        found.append((rel, number, stage, target))
    return found, set(allowed_pairs) - used


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    found, unused = violations(argv[1], ALLOWED)
    for rel, number, stage, target in found:
        what = "a CUDA toolkit header: kernels and measure only" if target.startswith("<") else "a later stage"
        print(f'{rel}:{number}: {stage} includes "{target}" ({what})')
    for rel, target in sorted(unused):
        print(f'{rel}: the allowed include of "{target}" is gone: remove it from ALLOWED')
    if found or unused:
        return 1
    print(f"include graph: ok (core < kernels < measure < run < report, gate < cli; {len(ALLOWED)} known exceptions)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
