#!/usr/bin/env bash
# Installs what attnprof needs to build and test, idempotently: nothing is installed twice.
# Debian/Ubuntu packages; the CUDA toolkit (nvcc, cudart, CUPTI, cuBLAS, NVTX3) is expected at
# /usr/local/cuda and is optional: without it only the CPU backend is built.
# ATTNPROF_SETUP_EXTRAS=0 skips the packages only tests need (chromium, slurm).
set -euo pipefail

# python3-dev and python3-numpy: the Python bridge (kernels/python) and its CPU test with a numpy callable.
packages=(cmake g++ make libcli11-dev libfmt-dev nlohmann-json3-dev catch2 python3 python3-dev python3-numpy)
if [[ "${ATTNPROF_SETUP_EXTRAS:-1}" == 1 ]]; then
  # chromium: the HTML report's browser test. slurm-wlm + munge: the scale-out test. clang + its
  # runtime: libFuzzer for the fuzz targets (scripts/sanitize.sh falls back to a mutation driver).
  # python3-prometheus-client: its OpenMetrics parser reads the export beside the test's own.
  packages+=(chromium slurm-wlm munge clang python3-prometheus-client)
  clang_rt="libclang-rt-$(clang++ --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p')-dev"
  [[ $clang_rt != libclang-rt--dev ]] && packages+=("$clang_rt")
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all packages present"
fi

if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: CUDA toolkit: $(/usr/local/cuda/bin/nvcc --version | tail -n 2 | head -n 1)"
else
  echo "setup: no CUDA toolkit at /usr/local/cuda: building the CPU backend only"
fi
