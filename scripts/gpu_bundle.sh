#!/usr/bin/env bash
# Packs what the GPU machine needs to run opbench's binaries into one folder (default .gpu/,
# ignored by git), for a device session's `carry`: the machine has CUDA's driver and toolkit and
# PyTorch's pip wheels of cuBLAS, cuDNN and NCCL, but none of Debian's fmt, OpenBLAS or Open MPI.
#
#   scripts/gpu_bundle.sh [--build DIR] [--out DIR] [--max-mib N]
#
#   --build DIR    the build tree (default build/; configure it with
#                  -DCMAKE_CUDA_ARCHITECTURES=90: the fatbins then hold Hopper's code alone)
#   --out DIR      the bundle folder (default .gpu/ in the source tree; replaced when a bundle
#                  or empty, refused otherwise)
#   --max-mib N    refuse a bundle above N MiB (default 40: the device tool carries 64 MiB with
#                  the working tree)
#
# The folder holds `run` (scripts/gpu_run.sh: sets the library paths and execs its arguments),
# `bundle.tar.xz` and `MANIFEST` (every packed file, its size and where it came from). The
# archive unpacks (on the first `run`) into root/: build/ with the stripped binaries at their
# build-tree paths (gemm/bench_gemm, ..., trace/trace_convert, capture/libopbench_capture.so and
# its /metrics module), lib/ with every shared library they load that is neither CUDA's (found
# on the GPU machine at run time) nor the C/C++ runtime's (glibc, libstdc++, libgcc_s, zlib:
# the machine's own, newer), and Open MPI's relocatable tree: ompi/bin/mpirun (orterun),
# its components under ompi/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 (those whose libraries
# are all packed: no UCX, verbs, OFI, PSM or OpenSHMEM, which a one-GPU machine has no use for),
# its help texts and MCA defaults, and PMIx's components; `run` points OPAL_PREFIX and the
# components' search paths at them, so mpirun and bench_ccl's MPI load nothing from /usr.
# Exit 0 with the bundle; 2 for a missing or unsuitable build, or a bundle above --max-mib.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${OPBENCH_BUILD_DIR:-$root/build}" out="$root/.gpu" max_mib=40
fail() { echo "error: gpu_bundle.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build|--out|--max-mib) [ $# -ge 2 ] || fail "$1 needs a value" ;;
  esac
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --max-mib) max_mib="$2"; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: gpu_bundle.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$max_mib" =~ ^[1-9][0-9]*$ ]] || fail "--max-mib: '$max_mib' is not a whole number of MiB"
# --out is replaced: only a bundle folder (its run and MANIFEST) or an empty or new one, never a
# folder of the user's.
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ] && ! { [ -f "$out/run" ] && [ -f "$out/MANIFEST" ]; }; then
  fail "--out $out holds files and is no bundle (no run and MANIFEST in it): left as it is; name a new or empty folder"
fi
[ -d "$build" ] || fail "no build tree at $build (bash scripts/build.sh -DCMAKE_CUDA_ARCHITECTURES=90)"
build="$(cd "$build" && pwd)"
binaries=(gemm/bench_gemm attention/bench_attention memops/bench_memops collectives/bench_ccl
          fsdp/bench_fsdp step/bench_step trace/trace_convert capture/libopbench_capture.so)
optional=(capture/libopbench_capture_http.so)
for b in "${binaries[@]}"; do
  [ -f "$build/$b" ] || fail "$build/$b is missing: build first (bash scripts/build.sh)"
done
ldd "$build/gemm/bench_gemm" | grep 'libcudart' >/dev/null ||
  fail "$build/gemm/bench_gemm links no CUDA runtime: this build has no CUDA (the CUDA toolkit must be at /usr/local/cuda)"
archs=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt")
case ";$archs;" in
  *";90;"*|*";90-real;"*|*";90a;"*) ;;
  *) fail "$build is built for CUDA architectures '$archs', not 90 (Hopper): reconfigure with -DCMAKE_CUDA_ARCHITECTURES=90" ;;
esac
[ "$archs" = 90 ] || echo "note: $build also holds code for '$archs'; -DCMAKE_CUDA_ARCHITECTURES=90 makes the bundle smaller" >&2

ompi_lib=/usr/lib/x86_64-linux-gnu/openmpi/lib
ompi_components=$ompi_lib/openmpi3
pmix_components=/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix
orterun=$(readlink -f "$(command -v orterun || command -v mpirun)")
[ -d "$ompi_components" ] && [ -x "$orterun" ] ||
  fail "Open MPI's components ($ompi_components) or orterun are missing (Debian's openmpi-bin)"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
dest="$stage/root"
mkdir -p "$dest/build" "$dest/lib" "$dest/ompi/bin" "$dest/ompi/etc" "$dest/ompi/share" \
         "$dest/ompi/lib/x86_64-linux-gnu/openmpi/lib" "$dest/pmix"
manifest="$stage/MANIFEST"
: > "$manifest"
note() { printf '%s\t%s\t%s\n' "$(stat -c %s "$1")" "${1#"$dest"/}" "$2" >> "$manifest"; }

# What the GPU machine brings itself: CUDA's libraries (the driver's, and the toolkit's or the
# torch venv's wheels: cudart, cuBLAS, cuBLASLt, cuDNN, NCCL, nvrtc, nvJitLink) and the C/C++
# runtime; and anything this machine's CUDA toolkit or an NVIDIA wheel provides here (CUPTI,
# cuFFT, ...), whose copy there matches its driver where this one's may not.
provided() {  # soname path
  case "$1" in
    linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libutil.so*|\
    libstdc++.so*|libgcc_s.so*|libz.so*|libresolv.so*|libssl.so*|libcrypto.so*) return 0 ;;
    libcuda.so*|libcudart.so*|libcublas.so*|libcublasLt.so*|libcudnn*.so*|libnccl.so*|\
    libnvrtc*.so*|libnvJitLink.so*|libnvidia-*.so*) return 0 ;;
  esac
  case "$(readlink -f "$2" 2>/dev/null || echo "$2")" in
    /usr/local/cuda*|/usr/local/cuda-*|*/site-packages/nvidia/*) return 0 ;;
  esac
  return 1
}
# The libraries a file needs beyond what the machine provides: "name path" lines; a library
# ldd cannot find here is a build problem (exit 2).
needs() {
  ldd "$1" | awk '/=>/ {print $1, $3} !/=>/ && $1 ~ /^\// {next}' | while read -r name path; do
    provided "$name" "$path" && continue
    [ "$path" != "not" ] || { echo "MISSING $name"; continue; }
    echo "$name $path"
  done
}
declare -A packed=()
pack_lib() {  # soname path why
  [ -n "${packed[$1]:-}" ] && return 0
  packed[$1]=1
  cp -L "$2" "$dest/lib/$1"
  chmod u+w "$dest/lib/$1"
  strip --strip-unneeded "$dest/lib/$1" 2>/dev/null || true
  note "$dest/lib/$1" "$(readlink -f "$2") ($3)"
}
for b in "${binaries[@]}" "${optional[@]}"; do
  [ -f "$build/$b" ] || continue
  mkdir -p "$dest/build/$(dirname "$b")"
  cp "$build/$b" "$dest/build/$b"
  chmod u+w "$dest/build/$b"
  strip --strip-unneeded "$dest/build/$b"
  note "$dest/build/$b" "$build/$b, stripped"
  while read -r name path; do
    [ "$name" != MISSING ] || fail "$build/$b needs $path, which ldd cannot find here"
    pack_lib "$name" "$path" "needed by $(basename "$b")"
  done < <(needs "$build/$b")
done

# Open MPI's components, with the libraries they need (PMIx, munge, Open MPI's libmca_common_*),
# except those for network fabrics and OpenSHMEM (UCX, verbs, OFI, PSM, netlink, NUMA), which a
# one-GPU machine has no use for and whose libraries it lacks.
kept=0 dropped=()
component_ok() {  # file -> prints the libraries to pack, fails for a fabric's component
  local extra=() name path
  while read -r name path; do
    [ -n "${packed[$name]:-}" ] && continue
    case "$name" in
      libuc[pstm].so*|libibverbs*|librdmacm*|libfabric*|libpsm*|libinfinipath*|liboshmem*|\
      libefa*|libnl-*|libnuma*|libxpmem*|libknem*|MISSING) return 1 ;;
    esac
    extra+=("$name $path")
  done < <(needs "$1")
  [ ${#extra[@]} -eq 0 ] || printf '%s\n' "${extra[@]}"
}
mkdir -p "$dest/ompi/lib/x86_64-linux-gnu/openmpi/lib/openmpi3" "$dest/pmix/lib/pmix"
for f in "$ompi_components"/*.so "$pmix_components"/*.so; do
  [ -f "$f" ] || continue
  if ! extra=$(component_ok "$f"); then
    dropped+=("$(basename "$f")")
    continue
  fi
  while read -r name path; do
    [ -n "$name" ] && pack_lib "$name" "$path" "needed by Open MPI's $(basename "$f")"
  done <<< "$extra"
  case "$f" in
    "$ompi_components"/*) to="$dest/ompi/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/$(basename "$f")" ;;
    *) to="$dest/pmix/lib/pmix/$(basename "$f")" ;;
  esac
  cp "$f" "$to"
  chmod u+w "$to"
  strip --strip-unneeded "$to" 2>/dev/null || true
  note "$to" "$f"
  kept=$((kept + 1))
done
cp "$orterun" "$dest/ompi/bin/mpirun"
note "$dest/ompi/bin/mpirun" "$orterun"
while read -r name path; do
  [ "$name" != MISSING ] || fail "$orterun needs $path, which ldd cannot find here"
  pack_lib "$name" "$path" "needed by mpirun"
done < <(needs "$orterun")
cp -r /usr/share/openmpi "$dest/ompi/share/openmpi"
cp -r /etc/openmpi "$dest/ompi/etc/openmpi"
[ -d /usr/lib/x86_64-linux-gnu/pmix2/share/pmix ] && cp -r /usr/lib/x86_64-linux-gnu/pmix2/share "$dest/pmix/share"

# Made beside --out and put in its place only whole: a failure leaves the last bundle as it was.
mkdir -p "$(dirname "$out")"
new=$(mktemp -d "$(dirname "$out")/.gpu_bundle.XXXXXX")
chmod 755 "$new"
tar -C "$stage" -cJf "$new/bundle.tar.xz" root
cp "$manifest" "$new/MANIFEST"
cp "$root/scripts/gpu_run.sh" "$new/run"
chmod +x "$new/run"
( cd "$root" && git rev-parse HEAD 2>/dev/null || echo unknown ) > "$new/REVISION"
rm -rf "$out"
mv "$new" "$out"
out="$(cd "$out" && pwd)"
unpacked=$(du -sb "$dest" | cut -f1)
size=$(du -sb "$out" | cut -f1)
echo "gpu_bundle.sh: $out: $(( size / 1024 / 1024 )) MiB ($size bytes; $(( unpacked / 1024 / 1024 )) MiB unpacked):" \
     "${#binaries[@]} binaries and the capture's /metrics module, ${#packed[@]} libraries," \
     "$kept Open MPI and PMIx components (left out: ${dropped[*]:-none})"
[ "$size" -le $(( max_mib * 1024 * 1024 )) ] ||
  fail "$out is $(( size / 1024 / 1024 )) MiB, above --max-mib $max_mib"
