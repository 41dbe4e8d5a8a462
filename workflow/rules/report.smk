# Anchor checks: the sources' claims evaluated on the results, as Parquet and an HTML table for the report.


rule anchors:
    input:
        lambda w: W.study_series_files(CONFIG, w.study),
    output:
        parquet=f"{RES}/{{study}}/anchors.parquet",
        html=report(f"{FIG}/{{study}}/anchors.html", caption="../report/anchors.rst", category="{study}"),
    log:
        f"{RES}/logs/{{study}}/anchors.log",
    run:
        W.job_anchors(CONFIG, wildcards.study, list(input), output.parquet, output.html, log[0])
