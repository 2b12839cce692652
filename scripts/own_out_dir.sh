# shellcheck shell=bash
# Sourced by gpu_validate.sh and gpu_selftest.sh: takes the --out folder for a run of the
# calling script. A folder an earlier run of that script wrote (its mark file) has its files
# moved aside into earlier-<date>-<time>/, not mixed with this run's (a step that does not run
# would leave the earlier one's files; trace_convert refuses a table folder that is not empty):
# on a warm device machine a rerun names the same --out. A folder holding anything else is
# refused (exit 2), left as it is.
#   own_out_dir SCRIPT OUT MARK   (OUT made if missing; MARK: the mark file's name in it)
own_out_dir() {
  local script=$1 out=$2 mark=$3 aside f previous
  mkdir -p "$out" || { echo "error: $script: cannot create $out" >&2; exit 2; }
  shopt -s nullglob dotglob
  previous=("$out"/*)
  shopt -u nullglob dotglob
  if [ ${#previous[@]} -gt 0 ]; then
    [ -f "$out/$mark" ] || { echo "error: $script: --out $out holds files no run of this script wrote; name a new or empty folder" >&2; exit 2; }
    aside="$out/earlier-$(date +%Y%m%d-%H%M%S)"
    mkdir -p "$aside" || { echo "error: $script: cannot create $aside" >&2; exit 2; }
    for f in "${previous[@]}"; do
      case "$(basename "$f")" in earlier-*|"$mark") continue ;; esac
      mv -- "$f" "$aside/" || { echo "error: $script: cannot move $f aside" >&2; exit 2; }
    done
    echo "$script: the earlier run's files moved to $aside" >&2
  fi
  : > "$out/$mark"
}
