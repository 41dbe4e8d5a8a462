# Obtain (download + verify, or generate the labelled substitute) and cache a study's dataset once,
# before the series jobs that read it run in parallel. The manifest records the variant actually used.


rule dataset:
    "Obtain (download and verify, or generate the labelled substitute) and cache a study's dataset; the manifest records the variant used."
    output:
        f"{RES}/{{study}}/dataset.json",
    params:
        signature=lambda w: W.dataset_signature(CONFIG, w.study),
    priority: W.DATA_PRIORITY  # every job of the study waits for it
    resources:
        **W.light_resources(CONFIG, "dataset"),
    log:
        f"{RES}/logs/{{study}}/dataset.log",
    shell:
        W.job_shell(JOB_CONFIG, "dataset", "{wildcards.study}", "{output:q}", "{log:q}")


# Data only some figures need (vdm2020 Fig. 4's MNIST-1M): its own job, which only the jobs of those figures wait
# for, so one figure's target never prepares another's data. It generates in parallel chunks on all the cores it
# is given (the same data whatever the number: each chunk is a pure function of the seed and its range).


rule figure_data:
    "Data only some figures need (vdm2020 Fig. 4's MNIST-1M), generated in parallel chunks, resumable."
    input:
        f"{RES}/{{study}}/dataset.json",
    output:
        f"{RES}/{{study}}/data/{{name}}.json",
    wildcard_constraints:
        study="[a-z0-9]+",
        name="[a-z0-9_]+",
    params:
        signature=lambda w: W.figure_data_signature(CONFIG, w.study, w.name),
    threads: W.FIGURE_DATA_THREADS  # Snakemake caps it at --cores (workflow.cores is unset for --report, --unlock)
    priority: W.DATA_PRIORITY
    resources:
        **W.light_resources(CONFIG, "figure_data"),
    log:
        f"{RES}/logs/{{study}}/data/{{name}}.log",
    shell:
        W.job_shell(JOB_CONFIG, "figure_data", "{wildcards.study}", "{wildcards.name}", "{output:q}", "{threads}",
                    "{log:q}")
