# Obtain (download + verify, or generate the labelled substitute) and cache a study's dataset once,
# before the series jobs that read it run in parallel. The manifest records the variant actually used.


rule dataset:
    output:
        f"{RES}/{{study}}/dataset.json",
    params:
        signature=lambda w: W.dataset_signature(CONFIG, w.study),
    resources:
        **W.light_resources(CONFIG, "dataset"),
    log:
        f"{RES}/logs/{{study}}/dataset.log",
    shell:
        W.job_shell(JOB_CONFIG, "dataset", "{wildcards.study}", "{output:q}", "{log:q}")
