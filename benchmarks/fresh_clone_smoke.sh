#!/usr/bin/env bash
# N consecutive smoke runs, each from a new `git clone` of this repository (its committed HEAD) into a
# temporary folder with empty data/ and results/: the check that a fresh clone works every time.
#
#   benchmarks/fresh_clone_smoke.sh [N]        (default N = 3)
#
# One virtual environment is reused (DPBENCH_VENV, default: this checkout's .venv, made by the README's
# set-up command); each run puts its clone first on PYTHONPATH, so the clone's own dpbench code runs (checked
# before each run), then, as CI does, `snakemake --report` (a second start-up: it verifies every result file) and
# `dpbench compare results` against the committed smoke reference. Prints each
# run's wall time and exit status; logs are kept in DPBENCH_LOGS (default: a
# temporary folder, printed). Extra snakemake arguments: SMOKE_ARGS (default "--cores 2"). Exits 1 if any
# run failed.
set -uo pipefail
N=${1:-3}
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
venv=${DPBENCH_VENV:-$root/.venv}
logs=${DPBENCH_LOGS:-$(mktemp -d -t dpbench-fresh-clone-logs.XXXXXX)}
args=${SMOKE_ARGS:---cores 2}
[ -x "$venv/bin/snakemake" ] || { echo "no snakemake in $venv: run the README's set-up command first" >&2; exit 2; }
mkdir -p "$logs"
echo "repository $root at $(git -C "$root" rev-parse --short HEAD); venv $venv; logs $logs"
failed=0
summary=()
for i in $(seq 1 "$N"); do
    work=$(mktemp -d -t dpbench-fresh-clone.XXXXXX)
    git clone -q "$root" "$work/clone" || { echo "run $i: git clone failed" >&2; exit 2; }
    where=$(cd "$work/clone" && PYTHONPATH="$work/clone" "$venv/bin/python" -c 'import dpbench, os; print(os.path.dirname(dpbench.__file__))')
    if [ "$where" != "$work/clone/dpbench" ]; then
        echo "run $i: dpbench resolves to $where, not the clone's code" >&2; exit 2
    fi
    test ! -e "$work/clone/data" && test ! -e "$work/clone/results" || { echo "run $i: clone has data/ or results/" >&2; exit 2; }
    start=$(date +%s)
    # shellcheck disable=SC2086
    (cd "$work/clone" && PYTHONPATH="$work/clone" "$venv/bin/snakemake" $args --configfile config/smoke.yaml) \
        > "$logs/run$i.log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    if [ "$rc" -eq 0 ]; then   # as CI does: the report (a second workflow start-up, which verifies every result
        # file and removes any that fails its digest), then every point and claim against the committed reference
        # shellcheck disable=SC2086
        (cd "$work/clone" && PYTHONPATH="$work/clone" "$venv/bin/snakemake" $args --configfile config/smoke.yaml \
            --report report.html) >> "$logs/run$i.log" 2>&1 \
        && (cd "$work/clone" && PYTHONPATH="$work/clone" "$venv/bin/dpbench" compare results) > "$logs/run$i.compare" 2>&1
        rc=$?
        echo "run $i: $(tail -1 "$logs/run$i.compare")"
    fi
    [ "$rc" -eq 0 ] || failed=$((failed + 1))
    line="run $i/$N: exit $rc, ${took}s (log $logs/run$i.log)"
    echo "$line"
    summary+=("$line")
    rm -rf "$work"
done
echo "== $((N - failed))/$N runs succeeded"
printf '%s\n' "${summary[@]}"
[ "$failed" -eq 0 ]
