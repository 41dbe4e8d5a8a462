# Anchor checks: the sources' claims evaluated on the results, as Parquet and an HTML table for the report.


rule anchors:
    input:
        lambda w: W.study_series_files(CONFIG, w.study),
    output:
        parquet=f"{RES}/{{study}}/anchors.parquet",
        html=report(f"{FIG}/{{study}}/anchors.html", caption="../report/anchors.rst", category="{study}"),
    run:
        from dpbench.report import run_anchor_checks

        run_anchor_checks(CONFIG, wildcards.study, list(input), output.parquet, output.html)
