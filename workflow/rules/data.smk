# Obtain (download + verify, or generate the labelled substitute) and cache a study's dataset once,
# before the series jobs that read it run in parallel. The manifest records the variant actually used.


rule dataset:
    output:
        f"{RES}/{{study}}/dataset.json",
    params:
        signature=lambda w: W.dataset_signature(CONFIG, w.study),
    run:
        W.prepare_dataset(CONFIG, wildcards.study, output[0])
