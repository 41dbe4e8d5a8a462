"""Helpers the Snakefile calls: validated config, targets and per-job parameters.

All grids are expanded here from the study modules, so the DAG and the plots read the same specs.
"""

from __future__ import annotations

import json
import sys
import re
from pathlib import Path

from dpbench import shards  # noqa: F401  (the rules call W.shards)
from dpbench.config import check_writable, coerce_numbers, load_yaml  # noqa: F401 (Snakefile)
from dpbench.studies import STUDIES, validate_config


def validated(config: dict, files=()) -> dict:
    """Validate the Snakemake config (raises ConfigError naming the key, before any job is scheduled).
    ``files``: the config files Snakemake merged; each is read again strictly (:func:`dpbench.config.load_yaml`),
    because Snakemake's own YAML reading keeps the last of duplicated keys silently. The folders the run
    writes are checked for writability (:func:`dpbench.config.check_writable`)."""
    for f in files:
        load_yaml(f)
    config = validate_config(dict(config))
    check_writable(config)
    return config


def subprocess_config(config: dict) -> dict:
    """The config in a Snakemake process that is not the main one (a cluster job parses the Snakefile again, with
    the config unvalidated): numbers coerced as in the main process (YAML 1.1 reads 1e-5 as a string), the
    plugins imported and the user datasets registered (:func:`dpbench.studies.extensions.activate`)."""
    from dpbench.studies.extensions import activate

    config = coerce_numbers(dict(config))
    activate(config)
    return config


def remove_damaged_results(config: dict) -> list:
    """:func:`dpbench.results.remove_damaged_results` on the run's results folder (not its cache) and
    :func:`~dpbench.results.remove_damaged_figures` on its figures folder."""
    from dpbench.results import remove_damaged_figures
    from dpbench.results import remove_damaged_results as remove

    return remove(config["results_dir"], skip=config["cache_dir"]) + remove_damaged_figures(config["figures_dir"])


def figures(config: dict) -> list[tuple[str, str]]:
    return [(s, f) for s, cfg in config["studies"].items() for f in STUDIES[s].figure_names(cfg)]


#: What a figure name may be (the ``figure`` rule's wildcard); every registered figure matches it (tests/studies).
#: ``tight_gain`` is the ``tight_gain`` rule's figure (:mod:`dpbench.tight_gain`), never a study's.
TIGHT_GAIN = "tight_gain"
FIGURE_NAME = rf"(?!{TIGHT_GAIN}\b)[A-Za-z0-9_-]+"

#: File name of a figure's results when ``group_series`` runs all its series in one job (the hyphen keeps it
#: apart from series names, which are ``[a-z0-9_]+``).
GROUPED = "all-series"


def series_names(config: dict, study: str, figure: str) -> list[str]:
    st = STUDIES[study]
    st.figure(figure)  # unknown figure -> clear error
    return list(st.series(config["studies"][study], figure))


def series_files(config: dict, study: str, figure: str) -> list[str]:
    """The result files a figure is drawn from: one per series, or with ``group_series: true`` one file that
    holds every series (one Snakemake job per figure: fewer job start-ups, less parallelism)."""
    names = series_names(config, study, figure)
    if config.get("group_series"):
        return [f"{config['results_dir']}/{study}/{figure}/{GROUPED}.parquet"]
    return [f"{config['results_dir']}/{study}/{figure}/{m}.parquet" for m in names]


def study_series_files(config: dict, study: str) -> list[str]:
    return [p for s, f in figures(config) if s == study for p in series_files(config, s, f)]


def tight_gain_figures(config: dict, study: str) -> list[str]:
    """The enabled figures of ``study`` that draw a tight-calibration series beside its source series."""
    from dpbench.tight_gain import tight_pairs

    return [f for s, f in figures(config) if s == study and tight_pairs(series_names(config, s, f))]


def tight_gain_inputs(config: dict, study: str) -> list[str]:
    """The result files of the figures :func:`tight_gain_figures` (the inputs of ``tight_gain.png``)."""
    return [p for f in tight_gain_figures(config, study) for p in series_files(config, study, f)]


def all_targets(config: dict) -> list[str]:
    """Targets of ``rule all``: every figure, the anchor table of every study with a figure enabled, the claims
    table, and every result Parquet. The Parquet
    files are targets in their own right (not mere inputs of the figures), so one that was deleted is rebuilt
    by the next run even though the figure drawn from it is up to date."""
    out = [f"{config['figures_dir']}/{s}/{f}.png" for s, f in figures(config)]
    out += [f"{config['figures_dir']}/{s}/anchors.html" for s in sorted({s for s, _ in figures(config)})]
    out += claims_inputs(config)   # the anchor tables: a deleted or damaged one is rebuilt, not left missing
    out += [f"{config['figures_dir']}/{s}/index.html" for s in sorted({s for s, _ in figures(config)})]
    out += [f"{config['figures_dir']}/{s}/tight_gain.png" for s in sorted({s for s, _ in figures(config)})
            if tight_gain_figures(config, s)]
    out += [p for s, f in figures(config) for p in series_files(config, s, f)]
    out.append(f"{config['figures_dir']}/privacy_as_labelled.html")
    if figures(config):
        out += [f"{config['figures_dir']}/claims.html", f"{config['figures_dir']}/claims_front.html",
                f"{config['results_dir']}/claims.parquet", ".dpbench/report_metadata.yaml"]
    return out


def claims_inputs(config: dict) -> list[str]:
    """The anchor checks of every study with a figure enabled: the inputs of the claims page."""
    return [f"{config['results_dir']}/{s}/anchors.parquet" for s in dict.fromkeys(s for s, _ in figures(config))]


def series_signature(config: dict, study: str, figure: str, series: str) -> str:
    """Everything a series' results depend on, as JSON: a Snakemake param, so a change reruns the job."""
    cfg = dict(config["studies"][study])
    figs = cfg.pop("figures")
    return json.dumps({"seed": config["seed"], "data": config["data"], "study": cfg,
                       "figure": figs[figure], "series": series,
                       "method_code": series_code_hash(study, series)}, sort_keys=True)


def figure_signature(config: dict, study: str, figure: str) -> str:
    """Signature of a grouped job: the signatures of all the figure's series."""
    return json.dumps([series_signature(config, study, figure, m) for m in series_names(config, study, figure)])


def figure_threads(config: dict, study: str, figure: str) -> int:
    return max(series_threads(config, study, figure, m) for m in series_names(config, study, figure))


def series_threads(config: dict, study: str, figure: str, series: str) -> int:
    """Threads (joblib workers) of a series job: ``n_jobs`` (default 8; Snakemake caps it at --cores). A study may
    ask for fewer where a series does not parallelise (``series_threads`` hook), so Snakemake runs several
    such jobs side by side. A sharded series' job only gathers its shards: one thread."""
    from dpbench import shards

    if shards.enabled(config, study):
        return 1
    n = int(config.get("n_jobs") or 8)
    wanted = STUDIES[study].series_threads(config["studies"][study], figure, series)
    return n if wanted is None else max(1, min(n, int(wanted)))


def series_code_hash(study: str, series: str) -> str:
    """Hash of the code that computes a series (the study's ``series_code_hash``; default: the registered
    method's module)."""
    return STUDIES[study].series_code_hash(series)


def caption_rst(config: dict, study: str, figure: str) -> str:
    """The figure's caption and deviation notes, escaped for reStructuredText (Snakemake report)."""
    st = STUDIES[study]
    spec = st.figure(figure)
    lines = [spec.caption,
             st.data_note or
             "Data: the variant actually used is printed on the figure (a red SUBSTITUTE DATA label when real "
             "MNIST could not be obtained), recorded in every result row and listed in the anchor-check table."]
    lines += [f"Note: {d}" for d in st.deviations(config["studies"][study], figure)]
    from dpbench import verdicts

    esc = [re.sub(r"([\\*_`|])", r"\\\1", line) for line in lines]
    if verdicts.reduced_grid(config, study, figure):  # bold, first: added after escaping
        esc.insert(0, f"**{verdicts.REDUCED_LABEL.capitalize()}**: this run's configuration for this figure "
                      "differs from the study's full grid (config.yaml).")
    return "\n\n".join(esc)


def dataset_signature(config: dict, study: str) -> str:
    return STUDIES[study].dataset_signature(config)


def figure_data_files(config: dict, study: str, figure: str) -> list[str]:
    """The manifests of the figure data a figure's jobs wait for (:meth:`Study.figure_data`); usually none."""
    return [f"{config['results_dir']}/{study}/data/{name}.json" for name in STUDIES[study].figure_data(config, figure)]


def figure_data_signature(config: dict, study: str, name: str) -> str:
    """What figure data ``name`` depends on (:meth:`Study.figure_data_signature`)."""
    return STUDIES[study].figure_data_signature(config, name)


def job_figure_data(config: dict, study: str, name: str, out: str, threads: int, log: str) -> None:
    from pathlib import Path

    from dpbench.store import atomic_write_bytes

    with log_to(log):
        manifest = STUDIES[study].prepare_figure_data(config, name, n_jobs=threads)
        atomic_write_bytes(Path(out), json.dumps(manifest, indent=1).encode())


def prepare_dataset(config: dict, study: str, out: str) -> dict:
    """Obtain the study's data (download or labelled substitute), cache it, write a manifest."""
    from pathlib import Path

    from dpbench.store import atomic_write_bytes

    Path(out).unlink(missing_ok=True)  # decide `auto` afresh: never from a previous manifest
    manifest = STUDIES[study].prepare_dataset(config)
    atomic_write_bytes(Path(out), json.dumps(manifest, indent=1).encode())
    return manifest


class log_to:
    """Context manager: copy the ``dpbench`` log (progress, warnings) into a Snakemake job's log file."""

    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        import logging
        from pathlib import Path

        from dpbench.runner import _setup_logging

        _setup_logging()
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.handler = logging.FileHandler(self.path, mode="w")
        self.handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logging.getLogger("dpbench").addHandler(self.handler)
        return self

    def __exit__(self, *exc):
        import logging

        logging.getLogger("dpbench").removeHandler(self.handler)
        self.handler.close()
        return False


# -- the jobs' command line: every rule runs ``python -m dpbench.jobs`` (see dpbench/jobs.py for why) ----------


def job_config(raw: dict, config: dict, main_process: bool = True) -> str:
    """Write the run's validated ``config`` where the jobs read it and return the path:
    ``<results_dir>/.jobs/config-<hash>.json``, keyed by ``raw``, the config as Snakemake read it (the same in the
    main process and in a cluster job's process, which parses the Snakefile again). The main process writes it
    (atomically; the same content for the same config and code); a job's process only if it is missing (e.g. a
    cluster folder the main process cannot see), with its own copy of the config."""
    from dpbench.config import ConfigError
    from dpbench.store import atomic_write_bytes, content_key

    path = Path(config["results_dir"]) / ".jobs" / f"config-{content_key(raw)[:16]}.json"
    text = json.dumps(config, indent=1)
    if json.loads(text) != config:
        raise ConfigError("invalid config: it must be representable as JSON (string keys, lists, numbers, strings), "
                          "because the jobs read it from a JSON file")
    try:
        current = path.read_bytes() if path.exists() else None
    except OSError:
        current = None
    if current is None or (main_process and current != text.encode()):   # missing, unreadable, garbage: rewritten
        atomic_write_bytes(path, text.encode())
    return str(path)


def job_shell(config_path: str, kind: str, *args: str) -> str:
    """A rule's shell command: ``python -m dpbench.jobs CONFIG_JSON KIND ARGS`` with this interpreter;
    ``args`` are Snakemake placeholders such as ``{wildcards.study}`` or ``{input:q}``."""
    import shlex
    import sys

    from dpbench.jobs import KINDS

    if kind not in KINDS:
        raise ValueError(f"unknown job kind {kind!r}; known: {sorted(KINDS)}")
    literal = f"{shlex.quote(sys.executable)} -m dpbench.jobs {shlex.quote(config_path)} {kind}"
    return " ".join([literal.replace("{", "{{").replace("}", "}}"), *args])


# -- one-line bodies for the Snakemake rules (each copies the dpbench log into the job's log file) -----


def job_dataset(config: dict, study: str, out: str, log: str) -> None:
    with log_to(log):
        prepare_dataset(config, study, out)


def job_series(config: dict, study: str, figure: str, series: str, out: str, threads: int, log: str) -> None:
    """Compute the series, or with sharding gather its final shards (one atomic write either way)."""
    from dpbench import shards
    from dpbench.runner import run_series

    with log_to(log):
        parts = shards.shard_files(config, study, figure, series, "f")
        if not parts:
            run_series(config, study, figure, series, out, n_jobs=threads)
            return
        import os

        from dpbench.results import provenance, write_parquet

        write_parquet(shards.gather(parts), out, provenance(config, study=study, figure=figure, series=series,
                                                            shards=len(parts), n_jobs=threads,
                                                            cpu_count=os.cpu_count()))


def job_shard(config: dict, study: str, figure: str, series: str, shard: str, inputs: list[str], out: str,
              threads: int, log: str) -> None:
    """One shard of a series (``dpbench.shards``): its own Parquet, gathered by the series job."""
    import os

    from dpbench import shards
    from dpbench.results import provenance, write_parquet

    with log_to(log):
        df = shards.run_shard(config, study, figure, series, shard, n_jobs=threads,
                              tuning_paths=[p for p in inputs if "/shards/" in p])
        write_parquet(df, out, provenance(config, study=study, figure=figure, series=series, shard=shard,
                                          n_jobs=threads, cpu_count=os.cpu_count()))


def job_series_group(config: dict, study: str, figure: str, out: str, threads: int, log: str) -> None:
    """Every series of a figure in one job, one Parquet file (``group_series: true``); each series still
    computes (and caches) its cells exactly as in its own job."""
    import os

    import pandas as pd

    from dpbench.results import provenance, write_parquet
    from dpbench.runner import run_series

    with log_to(log):
        names = series_names(config, study, figure)
        df = pd.concat([run_series(config, study, figure, m, None, n_jobs=threads) for m in names],
                       ignore_index=True)
        write_parquet(df, out, provenance(config, study=study, figure=figure, series=names, n_jobs=threads,
                                          cpu_count=os.cpu_count()))


def job_figure(config: dict, study: str, figure: str, inputs: list[str], out: str, log: str) -> None:
    from dpbench.figures import plot_from_files

    with log_to(log):
        plot_from_files(config, study, figure, inputs, out)


def privacy_table_signature(config: dict) -> str:
    """The privacy table depends on the config (which source options are active) and on its own data."""
    from dpbench.studies import privacy_table

    return json.dumps(privacy_table.table(config), sort_keys=True)


def job_privacy_table(config: dict, out_html: str, log: str) -> None:
    from dpbench.store import atomic_write_bytes
    from dpbench.studies import privacy_table

    with log_to(log):
        atomic_write_bytes(Path(out_html), privacy_table.html(config).encode())


def study_figure_files(config: dict, study: str) -> list[str]:
    """The PNGs of a study's enabled figures (the overview page's inputs)."""
    return [f"{config['figures_dir']}/{s}/{f}.png" for s, f in figures(config) if s == study]


def figure_label(config: dict, study: str, figure: str) -> str:
    from dpbench.report import figure_label as label

    return label(config, study, figure)


def anchors_label(path: str) -> str:
    from dpbench.report import anchors_label as label

    return label(path)


def job_gallery(config: dict, study: str, pngs: list[str], anchors: str, out_html: str, log: str) -> None:
    from dpbench.report import write_gallery

    with log_to(log):
        write_gallery(config, study, pngs, anchors, out_html)


def job_tight_gain(config: dict, study: str, out_png: str, out_csv: str, log: str, inputs: list[str]) -> None:
    from dpbench.tight_gain import run

    with log_to(log):
        run(inputs, study, out_png, out_csv)


def job_claims(config: dict, anchors: list[str], out_parquet: str, out_html: str, out_fragment: str,
               out_metadata: str, log: str) -> None:
    from dpbench.report import write_claims

    with log_to(log):
        write_claims(config, anchors, out_parquet, out_html, out_fragment, out_metadata)


def job_anchors(config: dict, study: str, inputs: list[str], out_parquet: str, out_html: str, log: str) -> None:
    from dpbench.report import run_anchor_checks

    with log_to(log):
        run_anchor_checks(config, study, inputs, out_parquet, out_html)


# -- resources (dpbench.costs): threads, mem_mb and runtime of every job ----------------------------------------


def _vdm_like(study: str) -> bool:
    from dpbench import shards

    return shards.shardable({}, study)


def _points_settings(config: dict, study: str, figure: str) -> list:
    st = STUDIES[study]
    return list(dict.fromkeys(p.setting for p in st.points(config["studies"][study], figure)))


def series_cpu_s(config: dict, study: str, figure: str, series: str) -> float:
    """Projected CPU-seconds of a whole series (tuning and final cells)."""
    from dpbench import costs, shards

    if not _vdm_like(study):
        return costs.study_series_cpu_s(config, study, figure, series)[0]
    sp = shards.plan(config, study, figure, series)
    return sum(s.cpu_s for s in sp.all)


#: priority of the data jobs: everything of their study waits for them
DATA_PRIORITY = 1_000_000
#: threads of a figure-data job (e.g. MNIST-1M generated in parallel chunks); Snakemake caps them at --cores
FIGURE_DATA_THREADS = 8


def shard_priority(config: dict, study: str, figure: str, series: str, shard: str) -> int:
    """Snakemake priority of a shard: the projected seconds of the longest chain of work it starts (a tuning
    shard: itself, then the series' largest final shard; a final shard: itself). Snakemake starts the ready job
    of highest priority first, so the long shards start early and the run does not end on one late long shard
    while the other cores idle (measured on vdm2020 Fig. 2a, 2 cores: the largest subsample-and-aggregate shard
    started at 94 s, the run ended at 377 s with one core idle for the last 208 s)."""
    from dpbench import shards

    sp = shards.plan(config, study, figure, series)
    s = sp.get(shard)
    tail = max((f.cpu_s for f in sp.final), default=0.0) if shard.startswith("t") else 0.0
    return int(s.cpu_s + tail)


def series_priority(config: dict, study: str, figure: str, series: str) -> int:
    """Snakemake priority of a series job: its projected CPU-seconds (a gather of shards: 0)."""
    from dpbench import shards

    if shards.shard_files(config, study, figure, series):
        return 0
    return int(series_cpu_s(config, study, figure, series))


def figure_priority(config: dict, study: str, figure: str) -> int:
    """Snakemake priority of a grouped figure job (``group_series``): its projected CPU-seconds."""
    return int(sum(series_cpu_s(config, study, figure, m) for m in series_names(config, study, figure)))


def _mem_mb(config: dict, study: str, figure: str, series: str, threads: int, settings=None) -> int:
    from dpbench import costs

    if not _vdm_like(study):
        return 2000 + 500 * threads
    cfg = config["studies"][study]
    settings = settings if settings is not None else _points_settings(config, study, figure)
    return costs.vdm2020_jobs_mem_mb(cfg, [dict(s[0]) for s in settings], threads)


def series_resources(config: dict, study: str, figure: str, series: str, threads: int) -> dict:
    """Resources of a series job (a gather of its shards when the series is sharded)."""
    from dpbench import costs, shards

    name = f"{study}/{figure}/{series}"
    if shards.shard_files(config, study, figure, series):
        return costs.job_resources(config, 0.0, threads, mem_mb=2000, name=name)
    return costs.job_resources(config, series_cpu_s(config, study, figure, series), threads,
                               mem_mb=_mem_mb(config, study, figure, series, threads), name=name)


def figure_resources(config: dict, study: str, figure: str, threads: int) -> dict:
    """Resources of a grouped job (every series of a figure, ``group_series: true``)."""
    from dpbench import costs

    names = series_names(config, study, figure)
    return costs.job_resources(config, sum(series_cpu_s(config, study, figure, m) for m in names), threads,
                               mem_mb=max(_mem_mb(config, study, figure, m, threads) for m in names),
                               name=f"{study}/{figure}/{GROUPED}")


def shard_resources(config: dict, study: str, figure: str, series: str, shard: str, threads: int) -> dict:
    from dpbench import costs, shards

    sp = shards.plan(config, study, figure, series)
    s = sp.get(shard)
    if shard.startswith("f"):
        settings = [sp.settings[u[0]] for u in s.units]
    else:
        settings = [sp.tuning_keys[u[0]][0] for u in s.units]
    return costs.job_resources(config, s.cpu_s, threads,
                               mem_mb=_mem_mb(config, study, figure, series, threads, settings),
                               name=f"{study}/{figure}/{series}/{shard}")


def shard_threads(config: dict, study: str, figure: str, series: str, shard: str) -> int:
    """A shard's threads: one unless ``n_jobs`` says otherwise (then not more than its groups of cells can use).
    Shards exist to fill the cores: Snakemake runs ``--cores`` single-threaded shards side by side, which keeps
    every core busy to the end; a multi-threaded shard idles its workers whenever it has fewer groups left than
    threads (measured on 16 cores with 8 threads per shard: two shards at a time, load 5-8 of 16)."""
    from dpbench import shards

    if not config.get("n_jobs"):
        return 1
    n = int(config["n_jobs"])
    s = shards.plan(config, study, figure, series).get(shard)
    units = sum(r1 - r0 for *_, r0, r1 in s.units)
    return max(1, min(n, units))


#: Resources of the light jobs (data preparation, plots, anchor checks, the privacy table).
LIGHT = {"dataset": {"mem_mb": 4000, "runtime": 60}, "figure_data": {"mem_mb": 8000, "runtime": 120}, "figure": {"mem_mb": 2000, "runtime": 15},
         "anchors": {"mem_mb": 2000, "runtime": 15}, "gallery": {"mem_mb": 1000, "runtime": 10},
         "tight_gain": {"mem_mb": 1000, "runtime": 10}, "privacy_table": {"mem_mb": 1000, "runtime": 10},
         "claims": {"mem_mb": 1000, "runtime": 10}}


def light_resources(config: dict, rule: str) -> dict:
    """Fixed resources of a light rule; ``resources.overrides`` matches the rule name."""
    import fnmatch

    out = dict(LIGHT[rule])
    for pattern, values in ((config.get("resources") or {}).get("overrides") or {}).items():
        if fnmatch.fnmatchcase(rule, pattern):
            out.update({k: int(v) for k, v in values.items()})
    return out


def _run_cores(workflow) -> int | None:
    """The cores a run's jobs share: ``--cores``; on a cluster executor without it (where ``workflow.cores``
    raises), ``--jobs`` × ``--max-threads`` (jobs at once, each at most that many threads); None if unknown."""
    try:
        return workflow.cores
    except Exception:  # noqa: BLE001 - Snakemake's WorkflowError: no --cores given to a cluster run
        rs = getattr(workflow, "resource_settings", None)
        nodes, threads = getattr(rs, "nodes", None), getattr(rs, "max_threads", None)
        return int(nodes) * int(threads or 1) if nodes else None


def announce_projection(config: dict, workflow) -> None:
    """Snakemake ``onstart``: print the projection of the jobs this run is about to start (CPU-hours, wall time on
    the run's cores, the largest job) and store it for the jobs' progress lines (:mod:`dpbench.progress`).
    Best effort: it reads Snakemake's DAG (``workflow.dag.needrun_jobs()``), and a failure here never stops a run."""
    import logging

    log = logging.getLogger("dpbench")
    try:
        from dpbench.plan import projection_before_run
        from dpbench.progress import write_progress_plan

        outputs = {str(f) for job in workflow.dag.needrun_jobs() for f in job.output}
        text, record = projection_before_run(config, outputs, _run_cores(workflow))
        write_progress_plan(config["results_dir"], record)
        if text:
            print(text, file=sys.stderr, flush=True)
    except Exception as e:  # noqa: BLE001 - a projection must never stop the run it describes
        log.warning("no projection for this run (%s: %s)", type(e).__name__, e)
