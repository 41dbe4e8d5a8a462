#!/usr/bin/env bash
# Measure how a full-size part of the default grid schedules on a many-core machine: one `snakemake` invocation
# with --cores N over the given figure targets, its CPU, wall time and utilisation (benchmarks/utilisation.py),
# beside the projection `dpbench plan` prints for the same jobs at start-up (the Snakefile's onstart line).
#
#   OUT=/tmp/sched CORES=16 LIMIT_S=450 benchmarks/schedule_check.sh vdm2020/fig5a vdm2020/fig5b
#
# Run from a checkout whose `python3` can import dpbench and snakemake. Outputs go to $OUT/grid (data, results,
# cache); $OUT gets snakemake.log, utilisation.{json,tsv}, the result Parquet files and the computed cells as
# tarballs (cells.tar.gz: copy its content into another run's cache folder and that run reads these cells instead
# of computing them, when both run the same code: cell keys carry the code's hash). LIMIT_S stops Snakemake with
# SIGINT after that many seconds; EXTRA_CONFIG (e.g. config/smoke.yaml) is merged under the paths (what finished is kept: an interrupted shard's finished cells are in the cache).
set -uo pipefail
OUT=${OUT:?set OUT to a folder for the outputs}
CORES=${CORES:-$(nproc)}
LIMIT_S=${LIMIT_S:-0}
G=${GRID:-$OUT/grid}     # data, results, cache (on a machine whose $OUT is copied back, put it elsewhere)
mkdir -p "$G"
cat > "$G/paths.yaml" <<EOF
# outputs of benchmarks/schedule_check.sh; nothing here changes a number
n_jobs: 1
data: {cache_dir: $G/data, mnist_source: ${MNIST_SOURCE:-auto}}
results_dir: $G/results
figures_dir: $G/figures
cache_dir: $G/cache
EOF
targets=()
for f in "$@"; do targets+=("$G/figures/$f.png"); done
[ ${#targets[@]} -gt 0 ] || { echo "name figure targets, e.g. vdm2020/fig5a" >&2; exit 2; }
lim=()
[ "$LIMIT_S" -gt 0 ] && lim=(timeout -k 60 -s INT "$LIMIT_S")
echo "== $(date +%T) snakemake --cores $CORES on $(nproc) CPUs: $*"
"${lim[@]}" python3 "$(dirname "$0")/utilisation.py" --out "$OUT" --cores "$CORES" -- \
    snakemake "${targets[@]}" --cores "$CORES" --configfile ${EXTRA_CONFIG:-} "$G/paths.yaml" > "$OUT/snakemake.log" 2>&1
rc=$?
echo "== $(date +%T) exit $rc"
grep -E "projected|utilisation|critical path|steps \(" "$OUT/snakemake.log" | head -5
grep -E "steps \(" "$OUT/snakemake.log" | tail -1
cat "$OUT/utilisation.json" 2>/dev/null
(cd "$G" && tar -czf "$OUT/cells.tar.gz" cache/cells 2>/dev/null)
(cd "$G" && find results -name "*.parquet" -o -name "*.json" | tar -czf "$OUT/results.tar.gz" -T - 2>/dev/null)
ls -la "$OUT"
exit $rc
