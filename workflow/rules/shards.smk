# Shards of a series (`sharding.enabled`, vdm2020-style series): tuning blocks (t000, ...) and repetition blocks
# (f000, ...) as separate jobs, each writing its own Parquet; the `series` rule gathers the final shards.
# Sizes come from the measured unit costs (dpbench/costs.py); `dpbench plan` lists them.


rule series_shard:
    "One shard of a series (a tuning or final block of cells, at most sharding.max_cpu_minutes of work)."
    input:
        f"{RES}/{{study}}/dataset.json",
        lambda w: W.shards.shard_inputs(CONFIG, w.study, w.figure, w.series, w.shard),
        lambda w: W.figure_data_files(CONFIG, w.study, w.figure),
    output:
        f"{RES}/{{study}}/{{figure}}/shards/{{series}}/{{shard}}.parquet",
    wildcard_constraints:
        study="[a-z0-9]+",
        figure="[A-Za-z0-9_]+",
        series="[a-z0-9_]+",
        shard="[tf][0-9]+",
    params:
        signature=lambda w: W.shards.shard_signature(CONFIG, w.study, w.figure, w.series, w.shard),
    threads: lambda w: W.shard_threads(CONFIG, w.study, w.figure, w.series, w.shard)
    priority: lambda w: W.shard_priority(CONFIG, w.study, w.figure, w.series, w.shard)  # longest chains first
    resources:
        mem_mb=lambda w, threads: W.shard_resources(CONFIG, w.study, w.figure, w.series, w.shard, threads)["mem_mb"],
        runtime=lambda w, threads: W.shard_resources(CONFIG, w.study, w.figure, w.series, w.shard, threads)["runtime"],
    log:
        f"{RES}/logs/{{study}}/{{figure}}/shards/{{series}}/{{shard}}.log",
    shell:
        W.job_shell(JOB_CONFIG, "shard", "{wildcards.study}", "{wildcards.figure}", "{wildcards.series}",
                    "{wildcards.shard}", "{output:q}", "{threads}", "{log:q}", "{input:q}")
