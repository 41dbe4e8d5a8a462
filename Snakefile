# dpbench: one DAG from data to figures. See README.md.
#   snakemake --cores all                                   everything, paper grids (config.yaml)
#   snakemake --cores all figures/vdm2020/fig2a.png         one figure and only what it needs
#   snakemake --cores 2 --configfile config/smoke.yaml      every figure on reduced grids (CI)
#   snakemake --report report.html                          figures, captions, anchor checks
import os

from snakemake.utils import min_version

min_version("8.10")

configfile: os.path.join(workflow.basedir, "config.yaml")  # the paper grids; --configfile merges on top

import dpbench.workflow as W

if workflow.is_main_process:
    # an invalid config fails here, naming the key, before any job runs (the files are re-read strictly and the
    # output folders checked for writability); a truncated or garbage result Parquet is removed, so that it is
    # a missing target and rebuilt. Job subprocesses (which parse this file again) skip these checks.
    CONFIG = W.validated(config, [os.path.join(workflow.basedir, "config.yaml"), *workflow.overwrite_configfiles])
    W.remove_damaged_results(CONFIG)
    # --executor slurm: a job cancelled with scancel ("CANCELLED by <uid>" in sacct) fails and is retried instead
    # of being polled forever (dpbench/slurm_compat.py); nothing happens with any other executor
    import dpbench.slurm_compat
    dpbench.slurm_compat.install()
else:
    CONFIG = W.subprocess_config(config)  # numbers as in the main process (1e-5), the config's plugins and datasets
# Every rule runs `python -m dpbench.jobs JOB_CONFIG KIND ...` (a shell command: no second Snakemake process per
# job); the jobs read the config validated above from this file.
JOB_CONFIG = W.job_config(config, CONFIG, main_process=workflow.is_main_process)
RES = CONFIG["results_dir"]
FIG = CONFIG["figures_dir"]

report: "workflow/report/workflow.rst"

include: "workflow/rules/data.smk"
include: "workflow/rules/experiments.smk"
include: "workflow/rules/shards.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"


onstart:
    W.announce_projection(CONFIG, workflow)   # the cost of what is about to run, then progress lines as jobs finish


rule all:
    "Every figure, anchor check, gallery and the claims page of the config (the default target)."
    input:
        W.all_targets(CONFIG),
