#!/usr/bin/env bash
# The bundle's wrapper (scripts/gpu_bundle.sh copies it to .gpu/run): runs a command with the
# bundle's binaries and libraries on a machine that has CUDA and PyTorch but not Debian's fmt,
# OpenBLAS or Open MPI.
#
#   .gpu/run COMMAND [ARGS...]     e.g. .gpu/run scripts/gpu_validate.sh --out "$OUT/v"
#   .gpu/run                       only print what it found
#
# On the first call it unpacks bundle.tar.xz beside it into ROOT = $TMPDIR (default /tmp)
# /opbench-gpu-<uid>/<the archive's size and time>/root, outside the bundle folder so that the
# folder a device call carries stays the archive's size (set OPBENCH_GPU_ROOT for another place:
# a new or empty folder, or one it unpacked into before; any other is refused, untouched).
# Then it sets, for COMMAND and everything it starts:
#   LD_LIBRARY_PATH    root/lib (fmt, OpenBLAS and gfortran, Open MPI, hwloc, libevent), then
#                      the directories holding CUDA's libraries — cuDNN, NCCL, cuBLAS(Lt) and the
#                      runtime from PyTorch's pip wheels (site-packages/nvidia/*/lib of `python3`
#                      and of /opt/torch/.venv), else /usr/local/cuda's — then what was set
#   OPAL_PREFIX and the OPAL_* directories, OMPI_MCA_mca_base_component_path,
#   PMIX_INSTALL_PREFIX, PMIX_MCA_mca_base_component_path
#                      Open MPI and PMIx relocated to root/ompi and root/pmix: mpirun, its
#                      components, help texts and defaults, nothing from /usr
#   PATH               root/ompi/bin (mpirun) first
#   OPBENCH_BUILD_DIR  root/build (the binaries at their build-tree paths, as the scripts expect)
#   OPBENCH_CAPTURE_LIB  root/build/capture/libopbench_capture.so
#   OPBENCH_CONFIG_DIR   configs/ of the source tree holding the bundle folder
#   OMPI_ALLOW_RUN_AS_ROOT, OMPI_ALLOW_RUN_AS_ROOT_CONFIRM  1 (the GPU machine runs as root)
# and prints on stderr where each CUDA library comes from, and any library a binary still
# cannot find. Exit: COMMAND's; 2 when the bundle is missing or cannot be unpacked.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/.." && pwd)"
say() { echo "gpu_run: $*" >&2; }
[ -n "${PATH:-}" ] || export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
[ -f "$here/bundle.tar.xz" ] || { say "error: $here/bundle.tar.xz is missing (scripts/gpu_bundle.sh makes it)"; exit 2; }
# The archive's root/ into $2. tar -J runs the xz program, which Debian ranks "standard", not
# "required": a machine without it (nothing says the device image has it) unpacks with Python's
# tarfile and its lzma module instead, the same members (hard links' targets stripped alike).
unpack() {
  if command -v xz >/dev/null 2>&1; then
    tar -C "$2" --strip-components=1 -xJf "$1"
    return
  fi
  say "no xz program: unpacking with python3's tarfile"
  python3 - "$1" "$2" <<'PY'
import sys, tarfile
src, dest = sys.argv[1], sys.argv[2]
strip = lambda name: name.split("/", 1)[1] if "/" in name else ""
with tarfile.open(src, "r:xz") as archive:
    members = []
    for m in archive.getmembers():
        m.name = strip(m.name)
        if not m.name:
            continue
        if m.islnk():
            m.linkname = strip(m.linkname)
        members.append(m)
    kw = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
    archive.extractall(dest, members=members, **kw)
PY
}
root="${OPBENCH_GPU_ROOT:-${TMPDIR:-/tmp}/opbench-gpu-$(id -u)/$(stat -c '%s-%Y' "$here/bundle.tar.xz")/root}"
if [ ! -f "$root/.unpacked" ]; then
  # A folder the user named is never emptied: it must be new or empty (the default one is ours,
  # and a half-unpacked one is removed).
  if [ -n "${OPBENCH_GPU_ROOT:-}" ]; then
    if [ -d "$root" ] && [ -n "$(ls -A "$root" 2>/dev/null)" ]; then
      say "error: OPBENCH_GPU_ROOT=$root holds files but no unpacked bundle (no .unpacked): name a new or empty folder"
      exit 2
    fi
  else
    rm -rf "$root"
  fi
  mkdir -p "$root" && unpack "$here/bundle.tar.xz" "$root" ||
    { say "error: cannot unpack $here/bundle.tar.xz into $root"; exit 2; }
  touch "$root/.unpacked"
fi
# Absolute from here on: the paths below go into PATH, LD_LIBRARY_PATH and OPAL_PREFIX, which a
# child that changes folder (the peer scripts cd to the repository) would read from elsewhere.
root="$(cd "$root" && pwd)"

# CUDA's libraries: the wheels of the Python that holds torch first, then the toolkit's.
dirs=()
for py in python3 /opt/torch/.venv/bin/python3; do
  command -v "$py" >/dev/null 2>&1 || continue
  while read -r sp; do
    for d in "$sp"/nvidia/*/lib "$sp"/nvidia/*/*/lib; do [ -d "$d" ] && dirs+=("$d"); done
  done < <("$py" -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null)
done
dirs+=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib)
cuda_path=""
for lib in libcudart.so.13 libcublasLt.so.13 libcublas.so.13 libcudnn.so.9 libnccl.so.2 libnvrtc.so.13; do
  found=""
  for d in "${dirs[@]}"; do
    if [ -e "$d/$lib" ]; then found="$d"; break; fi
  done
  if [ -z "$found" ]; then
    say "$lib: not found (searched the nvidia wheels of python3 and /opt/torch/.venv, /usr/local/cuda)"
    continue
  fi
  say "$lib from $found"
  case ":$cuda_path:" in *":$found:"*) ;; *) cuda_path="${cuda_path:+$cuda_path:}$found" ;; esac
done
# The driver's libcuda.so.1: where the loader finds it already, or in the driver's own folder.
if ldconfig -p 2>/dev/null | grep 'libcuda\.so\.1 ' >/dev/null; then
  say "libcuda.so.1 (the driver's) from the loader's cache"
else
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
    if [ -e "$d/libcuda.so.1" ]; then
      say "libcuda.so.1 (the driver's) from $d"
      cuda_path="${cuda_path:+$cuda_path:}$d"
      break
    fi
  done
fi
export LD_LIBRARY_PATH="$root/lib${cuda_path:+:$cuda_path}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

ompi="$root/ompi"
export OPAL_PREFIX="$ompi" OPAL_EXEC_PREFIX="$ompi" OPAL_BINDIR="$ompi/bin"
export OPAL_LIBDIR="$ompi/lib/x86_64-linux-gnu/openmpi/lib"
export OPAL_PKGLIBDIR="$OPAL_LIBDIR/openmpi3"
export OPAL_DATAROOTDIR="$ompi/share" OPAL_DATADIR="$ompi/share" OPAL_PKGDATADIR="$ompi/share/openmpi"
export OPAL_SYSCONFDIR="$ompi/etc/openmpi"
export OMPI_MCA_mca_base_component_path="$OPAL_PKGLIBDIR"
export PMIX_INSTALL_PREFIX="$root/pmix" PMIX_MCA_mca_base_component_path="$root/pmix/lib/pmix"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH="$ompi/bin:$PATH"
export OPBENCH_BUILD_DIR="$root/build"
export OPBENCH_CAPTURE_LIB="$root/build/capture/libopbench_capture.so"
[ -d "$src/configs" ] && export OPBENCH_CONFIG_DIR="$src/configs"

missing=$(for b in "$root"/build/*/bench_* "$root"/build/trace/trace_convert "$ompi/bin/mpirun"; do
  ldd "$b" 2>/dev/null | awk -v b="${b#"$root"/}" '/not found/ {print b ": " $1}'
done)
[ -z "$missing" ] || say "still not found: $(echo "$missing" | tr '\n' ';' | sed 's/;$//')"
[ $# -gt 0 ] || { say "bundle at $root ($(cat "$here/REVISION" 2>/dev/null || echo 'revision unknown'))"; exit 0; }
exec "$@"
