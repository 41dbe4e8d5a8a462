# Anchor checks: the sources' claims evaluated on the results, as Parquet and an HTML table for the report.


rule anchors:
    "Check a study's claims (the sources' numbers and statements) against its results: anchors.parquet and anchors.html."
    input:
        lambda w: W.study_series_files(CONFIG, w.study),
    output:
        parquet=f"{RES}/{{study}}/anchors.parquet",
        html=report(f"{FIG}/{{study}}/anchors.html", caption="../report/anchors.rst", category="{study}",
                    subcategory="anchor checks",
                    labels=lambda w: {"page": W.anchors_label(f"{RES}/{w.study}/anchors.parquet")}),
    resources:
        **W.light_resources(CONFIG, "anchors"),
    log:
        f"{RES}/logs/{{study}}/anchors.log",
    shell:
        W.job_shell(JOB_CONFIG, "anchors", "{wildcards.study}", "{output.parquet:q}", "{output.html:q}", "{log:q}",
                    "{input:q}")


# One overview page per study: every figure as a titled thumbnail with its caption beside it, and the verdicts.
rule gallery:
    "A study's gallery page: every figure with its caption and the anchor verdicts."
    input:
        png=lambda w: W.study_figure_files(CONFIG, w.study),
        anchors=f"{RES}/{{study}}/anchors.parquet",
    output:
        html=report(f"{FIG}/{{study}}/index.html", caption="../report/gallery.rst", category="{study}",
                    subcategory="overview", labels={"page": "every figure with its title and caption"}),
    resources:
        **W.light_resources(CONFIG, "gallery"),
    log:
        f"{RES}/logs/{{study}}/gallery.log",
    shell:
        W.job_shell(JOB_CONFIG, "gallery", "{wildcards.study}", "{input.anchors:q}", "{output.html:q}", "{log:q}",
                    "{input.png:q}")


# What each tight calibration gains: one figure per study with a tight-calibration series (dashed) in a figure.
rule tight_gain:
    "Accuracy gained by tight calibration: tight − source per figure, metric and point, with its 95 % interval."
    input:
        lambda w: W.tight_gain_inputs(CONFIG, w.study),
    output:
        png=report(f"{FIG}/{{study}}/tight_gain.png", caption="../report/tight_gain.rst", category="{study}",
                   subcategory="tight calibration", labels={"figure": "accuracy gained by tight calibration"}),
        csv=f"{FIG}/{{study}}/tight_gain.csv",
    resources:
        **W.light_resources(CONFIG, "tight_gain"),
    log:
        f"{RES}/logs/{{study}}/tight_gain.log",
    shell:
        W.job_shell(JOB_CONFIG, "tight_gain", "{wildcards.study}", "{output.png:q}", "{output.csv:q}", "{log:q}",
                    "{input:q}")


# What the ε of every method means (neighbouring relation, what it covers, the sources' options): one page.
rule privacy_table:
    "What the epsilon of every method means: neighbouring relation, what it covers, the sources' options (one page)."
    output:
        html=report(f"{FIG}/privacy_as_labelled.html", caption="../report/privacy.rst", category="privacy as labelled"),
    params:
        signature=lambda w: W.privacy_table_signature(CONFIG),
    resources:
        **W.light_resources(CONFIG, "privacy_table"),
    log:
        f"{RES}/logs/privacy_as_labelled.log",
    shell:
        W.job_shell(JOB_CONFIG, "privacy_table", "{output.html:q}", "{log:q}")


# Every checked claim of every study in one table: the report's landing page (workflow/report/workflow.rst embeds
# claims_front.html, whose links open the figures in the report) and a page of its own beside the figures.
rule claims:
    "The claims page of every study (claims.parquet, the report's landing table): reproduced k of n."
    input:
        W.claims_inputs(CONFIG),
    output:
        parquet=f"{RES}/claims.parquet",
        html=report(f"{FIG}/claims.html", caption="../report/claims.rst", category="claims",
                    labels={"page": "every checked claim of every study"}),
        front=f"{FIG}/claims_front.html",
        metadata=".dpbench/report_metadata.yaml",  # the report's landing page: see profiles/default/config.yaml
    resources:
        **W.light_resources(CONFIG, "claims"),
    log:
        f"{RES}/logs/claims.log",
    shell:
        W.job_shell(JOB_CONFIG, "claims", "{output.parquet:q}", "{output.html:q}", "{output.front:q}",
                    "{output.metadata:q}", "{log:q}", "{input:q}")
