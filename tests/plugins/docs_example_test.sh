#!/usr/bin/env bash
# docs/plugins.md's plugin, as a reader would take it: the source and the build command copied out of
# the page into a folder outside this tree, built with that one command, then listed by attnprof.
# (On a GPU machine scripts/device/plugins.sh also sweeps and gates it.) Skips (77) without nvcc.
# Usage: docs_example_test.sh ATTNPROF SOURCE_DIR
set -euo pipefail
attnprof="$(realpath "$1")"
source_dir="$2"
nvcc_bin="$(command -v nvcc || true)"
[[ -n "$nvcc_bin" ]] || nvcc_bin=/usr/local/cuda/bin/nvcc
[[ -x "$nvcc_bin" ]] || { echo "no nvcc: skipped"; exit 77; }
work="$(mktemp -d "${TMPDIR:-/tmp}/attnprof-docs-plugin.XXXXXX")"
trap 'rm -rf "$work"' EXIT
python3 "$source_dir/scripts/device/docs_plugin.py" "$source_dir/docs/plugins.md" "$work"
cd "$work"
PATH="$(dirname "$nvcc_bin"):$PATH" ATTNPROF="$source_dir" bash build.sh
[[ -f my_attention.so ]] || { echo "FAIL: the page's command built no my_attention.so" >&2; exit 1; }
"$attnprof" kernels --plugin ./my_attention.so >kernels.txt
grep -q "^my-attention  \[cuda\]" kernels.txt || { echo "FAIL: my-attention not listed:" >&2; cat kernels.txt >&2; exit 1; }
grep -q "supports hdim 64,128; fp16,bf16" kernels.txt || { echo "FAIL: wrong support:" >&2; cat kernels.txt >&2; exit 1; }
echo "docs example: ok"
