#!/usr/bin/env bash
# The whole default grid (config.yaml), figure by figure, resumable across sessions and machines' restarts:
#
#   benchmarks/default_grid.sh            # GRID_DIR=~/dpbench-grid, the committed HEAD, --cores 1 per figure
#   GRID_DIR=/big/disk CORES=2 REV=abc123 benchmarks/default_grid.sh
#   STUDIES="estimation membership" benchmarks/default_grid.sh     # only these studies (no claims page)
#   STUDIES=vdm2020 FIRST="fig7a fig7b" benchmarks/default_grid.sh  # these vdm2020 figures first
#   STUDIES=vdm2020 FIRST=fig4 ONLY_FIRST=1 benchmarks/default_grid.sh  # only these vdm2020 figures
#   EXTRA_CONFIG=config/smoke.yaml GRID_DIR=/tmp/g benchmarks/default_grid.sh   # another grid (a check of this
#                                                                  # script; its reference is then not "default")
#
# * The code is frozen: a clone of REV in $GRID_DIR/src (made once; reused while it exists), with its own venv
#   ($GRID_DIR/src/.venv, or DPBENCH_VENV). Cell keys carry the hash of the code that computes them, so a grid
#   run across sessions must run one revision; check a later revision against it with `dpbench compare`.
# * Outputs outside any work tree: $GRID_DIR/{data,results,figures,cache} (paths.yaml overrides only paths and
#   n_jobs, nothing that changes a number; the rows are not "reduced grid").
# * One `snakemake TARGET` per figure, cheapest studies first, then each study's anchor checks, the claims page;
#   each invocation's wall, user and system CPU (children included) and peak RSS are appended to
#   $GRID_DIR/timings.tsv. A figure already recorded with exit 0 is skipped; an interrupted one resumes from its
#   cached cells. Progress: $GRID_DIR/progress.log; Snakemake's output: $GRID_DIR/snakemake.log.
# * When every target has finished: `dpbench reference` writes $GRID_DIR/reference (copy it to
#   docs/reference/default).
set -uo pipefail
GRID_DIR=${GRID_DIR:-$HOME/dpbench-grid}
CORES=${CORES:-1}
STUDIES=${STUDIES:-estimation membership song2018 wu2016 audit vdm2020}
EXTRA=()      # snakemake: --configfile paths.yaml EXTRA;  dpbench: --configfile paths.yaml --configfile EXTRA
DP_EXTRA=()
[ -n "${EXTRA_CONFIG:-}" ] && EXTRA=("$EXTRA_CONFIG") && DP_EXTRA=(--configfile "$EXTRA_CONFIG")
# the repository: this script's (run from a copy elsewhere, e.g. to edit the original while it runs: the current
# directory's)
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null || git rev-parse --show-toplevel 2>/dev/null)
[ -n "$root" ] || [ -d "$GRID_DIR/src" ] || { echo "default_grid.sh: run it inside the repository" >&2; exit 2; }
REV=${REV:-$(git -C "$root" rev-parse HEAD)}
mkdir -p "$GRID_DIR"
if [ ! -d "$GRID_DIR/src" ]; then
    git clone -q "$root" "$GRID_DIR/src" && git -C "$GRID_DIR/src" checkout -q "$REV" || exit 2
fi
venv=${DPBENCH_VENV:-$GRID_DIR/src/.venv}
if [ ! -x "$venv/bin/snakemake" ]; then
    python3 -m venv "$venv" && "$venv/bin/pip" install --quiet -e "$GRID_DIR/src[test]" || exit 2
fi
cat > "$GRID_DIR/paths.yaml" <<EOF
# the default grid, outputs outside the work tree (written by benchmarks/default_grid.sh)
n_jobs: 1
data: {cache_dir: $GRID_DIR/data}
results_dir: $GRID_DIR/results
figures_dir: $GRID_DIR/figures
cache_dir: $GRID_DIR/cache
EOF
cd "$GRID_DIR/src" || exit 2
export PATH="$venv/bin:$PATH" PYTHONPATH="$GRID_DIR/src"
echo "== $(date +%F' '%T) default grid at $(git rev-parse --short HEAD) in $GRID_DIR, --cores $CORES" >> "$GRID_DIR/progress.log"
F=$GRID_DIR/figures
R=$GRID_DIR/results
# the cheap studies first, each with its anchors, then vdm2020 in the config's figure order: the order in which
# `dpbench plan` attributes a model shared by several figures to the first of them (later ones read the cache)
targets=()
for study in $STUDIES; do
    [ "$study" = vdm2020 ] && continue
    for f in $(dpbench figures --configfile "$GRID_DIR/paths.yaml" "${DP_EXTRA[@]}" | awk -F'\t' -v s="$study/" 'index($1, s) == 1 {print $1}'); do
        targets+=("$F/$f.png")
    done
    targets+=("$R/$study/anchors.parquet")
done
if [[ " $STUDIES " == *" vdm2020 "* ]]; then
    # FIRST="fig7a fig7b": these vdm2020 figures before the others (e.g. to finish cheap figures before a session
    # ends while an expensive one is still partial; the cache makes any order give the same numbers)
    # ONLY_FIRST=1: those figures and nothing else (e.g. one figure at another revision in its own GRID_DIR)
    for f in ${FIRST:-}; do targets+=("$F/vdm2020/$f.png"); done
    if [ -z "${ONLY_FIRST:-}" ]; then
        for f in $(dpbench figures --configfile "$GRID_DIR/paths.yaml" "${DP_EXTRA[@]}" | awk -F"\t" 'index($1, "vdm2020/") == 1 {print $1}'); do
            [[ " ${FIRST:-} " == *" ${f#vdm2020/} "* ]] || targets+=("$F/$f.png")
        done
        targets+=("$R/vdm2020/anchors.parquet" "$R/claims.parquet")
    fi
fi
# A run killed mid-figure (a session's end, a reboot) leaves Snakemake's locks behind, and every later invocation
# touching those files would stop with a LockException: remove them when no Snakemake runs in this directory.
if ! pgrep -f "snakemake .*--configfile $GRID_DIR/paths.yaml" > /dev/null \
        && [ -n "$(ls -A .snakemake/locks 2>/dev/null)" ]; then
    echo "== $(date +%T) stale Snakemake locks of an interrupted run removed" >> "$GRID_DIR/progress.log"
    snakemake --unlock --configfile "$GRID_DIR/paths.yaml" "${EXTRA[@]}" >> "$GRID_DIR/snakemake.log" 2>&1
fi
for t in "${targets[@]}"; do
    if awk -F'\t' -v t="$t" '$1 == t && $NF == 0 {found = 1} END {exit !found}' "$GRID_DIR/timings.tsv" 2>/dev/null; then
        continue
    fi
    echo "== $(date +%T) $t" >> "$GRID_DIR/progress.log"
    /usr/bin/time -f "%e\t%U\t%S\t%M" -o "$GRID_DIR/time.tmp" \
        nice -n 5 snakemake "$t" --cores "$CORES" --configfile "$GRID_DIR/paths.yaml" "${EXTRA[@]}" >> "$GRID_DIR/snakemake.log" 2>&1
    rc=$?
    printf "%s\t%s\t%s\t%s\n" "$t" "$(git rev-parse --short HEAD)" "$(tail -1 "$GRID_DIR/time.tmp")" "$rc" >> "$GRID_DIR/timings.tsv"
done
if [ -f "$R/claims.parquet" ] || [ "$STUDIES" != "estimation membership song2018 wu2016 audit vdm2020" ]; then
    dpbench reference "$R" "$GRID_DIR/reference" --figures "$F" \
        --note "config.yaml, benchmarks/default_grid.sh at $(git rev-parse --short HEAD), --cores $CORES per figure"
fi
echo "== $(date +%T) done" >> "$GRID_DIR/progress.log"
