# One job per (study, figure, series); joblib parallelises the cells inside it with the job's threads.
# Cells are cached by content under CONFIG["cache_dir"], so an interrupted job resumes where it stopped
# and two figures never compute the same cell twice.


rule series:
    "One series (method) of one figure: every cell of its grid, cached per cell, gathered into a Parquet file."
    input:
        f"{RES}/{{study}}/dataset.json",
        lambda w: W.shards.shard_files(CONFIG, w.study, w.figure, w.series, "f"),  # [] unless sharded
        lambda w: W.figure_data_files(CONFIG, w.study, w.figure),  # e.g. MNIST-1M for vdm2020 Fig. 4
    output:
        f"{RES}/{{study}}/{{figure}}/{{series}}.parquet",
    wildcard_constraints:
        study="[a-z0-9]+",
        figure="[A-Za-z0-9_]+",
        series="[a-z0-9_]+",
    params:
        signature=lambda w: W.series_signature(CONFIG, w.study, w.figure, w.series),
    threads: lambda w: W.series_threads(CONFIG, w.study, w.figure, w.series)  # Snakemake caps it at --cores
    priority: lambda w: W.series_priority(CONFIG, w.study, w.figure, w.series)  # longest jobs first
    resources:
        mem_mb=lambda w, threads: W.series_resources(CONFIG, w.study, w.figure, w.series, threads)["mem_mb"],
        runtime=lambda w, threads: W.series_resources(CONFIG, w.study, w.figure, w.series, threads)["runtime"],
    log:
        f"{RES}/logs/{{study}}/{{figure}}/{{series}}.log",
    shell:
        W.job_shell(JOB_CONFIG, "series", "{wildcards.study}", "{wildcards.figure}", "{wildcards.series}", "{output:q}",
                    "{threads}", "{log:q}")


# With `group_series: true` (the smoke profile) one job computes every series of a figure into one file.
rule series_group:
    "Every series of one figure in one job (group_series: true)."
    input:
        f"{RES}/{{study}}/dataset.json",
        lambda w: W.figure_data_files(CONFIG, w.study, w.figure),
    output:
        f"{RES}/{{study}}/{{figure}}/{W.GROUPED}.parquet",
    wildcard_constraints:
        study="[a-z0-9]+",
        figure="[A-Za-z0-9_]+",
    params:
        signature=lambda w: W.figure_signature(CONFIG, w.study, w.figure),
    threads: lambda w: W.figure_threads(CONFIG, w.study, w.figure)
    priority: lambda w: W.figure_priority(CONFIG, w.study, w.figure)
    resources:
        mem_mb=lambda w, threads: W.figure_resources(CONFIG, w.study, w.figure, threads)["mem_mb"],
        runtime=lambda w, threads: W.figure_resources(CONFIG, w.study, w.figure, threads)["runtime"],
    log:
        f"{RES}/logs/{{study}}/{{figure}}/{W.GROUPED}.log",
    shell:
        W.job_shell(JOB_CONFIG, "series_group", "{wildcards.study}", "{wildcards.figure}", "{output:q}", "{threads}",
                    "{log:q}")
