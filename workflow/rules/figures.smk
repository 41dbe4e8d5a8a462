# Figures are drawn from Parquet only; the caption (with every deviation) is written beside the PNG.


rule figure:
    "Draw one figure (PNG) and its caption with the deviation notes (TXT) from its series' results."
    input:
        lambda w: W.series_files(CONFIG, w.study, w.figure),
    output:
        png=report(f"{FIG}/{{study}}/{{figure}}.png", caption="../report/figure.rst", category="{study}",
                   subcategory="figures", labels=lambda w: {"figure": W.figure_label(CONFIG, w.study, w.figure)}),
        txt=f"{FIG}/{{study}}/{{figure}}.txt",
    wildcard_constraints:
        figure=W.FIGURE_NAME,  # any registered figure (an unknown name fails with the study's list of figures)
    params:
        caption=lambda w: W.caption_rst(CONFIG, w.study, w.figure),
    resources:
        **W.light_resources(CONFIG, "figure"),
    log:
        f"{RES}/logs/{{study}}/{{figure}}.plot.log",
    shell:
        W.job_shell(JOB_CONFIG, "figure", "{wildcards.study}", "{wildcards.figure}", "{output.png:q}", "{log:q}",
                    "{input:q}")
