# Anchor checks: the sources' claims evaluated on the results, as Parquet and an HTML table for the report.


rule anchors:
    input:
        lambda w: W.study_series_files(CONFIG, w.study),
    output:
        parquet=f"{RES}/{{study}}/anchors.parquet",
        html=report(f"{FIG}/{{study}}/anchors.html", caption="../report/anchors.rst", category="{study}"),
    resources:
        **W.light_resources(CONFIG, "anchors"),
    log:
        f"{RES}/logs/{{study}}/anchors.log",
    run:
        W.job_anchors(CONFIG, wildcards.study, list(input), output.parquet, output.html, log[0])


# What the ε of every method means (neighbouring relation, what it covers, the sources' options): one page.
rule privacy_table:
    output:
        html=report(f"{FIG}/privacy_as_labelled.html", caption="../report/privacy.rst", category="privacy as labelled"),
    params:
        signature=lambda w: W.privacy_table_signature(CONFIG),
    resources:
        **W.light_resources(CONFIG, "privacy_table"),
    log:
        f"{RES}/logs/privacy_as_labelled.log",
    run:
        W.job_privacy_table(CONFIG, output.html, log[0])
