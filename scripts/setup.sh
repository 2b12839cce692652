#!/usr/bin/env bash
# Installs every build and run dependency of opbench from Debian's packages.
# Idempotent: when everything is already installed it only checks, and returns in about a second.
set -euo pipefail
case "${1:-}" in
  "") ;;
  -h|--help) sed -n '2,3p' "$0" | sed 's/^# //'; echo "  scripts/setup.sh   (no arguments)"; exit 0 ;;
  *) echo "error: setup.sh: takes no arguments, got '$1' (see --help)" >&2; exit 2 ;;
esac

packages=(
  build-essential cmake ninja-build pkg-config git
  libfmt-dev nlohmann-json3-dev libcxxopts-dev catch2 zlib1g-dev
  libopenblas-dev openmpi-bin libopenmpi-dev
  python3 python3-numpy python3-matplotlib python3-torch libjemalloc2
  clang-format clang libclang-rt-14-dev
  munge slurmctld slurmd slurm-client slurm-wlm-basic-plugins
  libcpp-httplib-dev prometheus
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: CUDA toolkit found at /usr/local/cuda: the GPU providers will be built" >&2
else
  echo "setup: no CUDA toolkit at /usr/local/cuda: building the CPU providers only" >&2
fi
echo "setup: all dependencies present" >&2
