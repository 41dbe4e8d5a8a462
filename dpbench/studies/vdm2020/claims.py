"""vdm2020 — the paper's claims checked on the results, as data (docs/studies/vdm2020.md#claims): id, figure,
the section of van der Maaten & Hannun (2020) that makes the claim, and the statement; ``{...}`` fields are filled
by the check with what it derived."""

from dpbench import verdicts as V

CLAIMS = V.claim_table(
    V.Claim('claim1a', 'fig1a', 'van der Maaten & Hannun 2020, §4.2',
            'δ=0, B=100: subsample-and-aggregate is best for most values of ε (§4.2)'),
    V.Claim('claim1c', 'fig1a', 'van der Maaten & Hannun 2020, §4.2',
            'prediction sensitivity performs poorly across the board (§4.2)'),
    V.Claim('claim2', 'fig1b', 'van der Maaten & Hannun 2020, §4.2',
            'δ=1e-5: DP-SGD outperforms all other methods (§4.2)'),
    V.Claim('claim3b', 'fig2a', 'van der Maaten & Hannun 2020, §4.2',
            'ε=1, δ=0: loss perturbation outperforms subsample-and-aggregate at B ⪆ {paper_crossover_b:g} (§4.2);'
            ' checked as: subsample-and-aggregate more accurate at every B ≤ {lo_b:g} and loss perturbation at '
            'every B ≥ {hi_b:g} (the crossover within [{lo_b:g}, {hi_b:g}]), {beyond}'),
    V.Claim('claim4', 'fig2b', 'van der Maaten & Hannun 2020, §4.2',
            'ε=1, δ=1e-5: loss perturbation and DP-SGD perform at least as well as subsample-and-aggregate for '
            'all B (§4.2); checked as: each more accurate than subsample-and-aggregate at every B, {beyond} (a '
            "tie within them is undecided, never a pass: 'at least as well' cannot be told from a tie)"),
    V.Claim('claim1b', 'fig1a', 'van der Maaten & Hannun 2020, §4.2',
            'δ=0: loss perturbation is best for small ε (§4.2)'),
    V.Claim('claim3a', 'fig2a', 'van der Maaten & Hannun 2020',
            'ε=1, δ=0: subsample-and-aggregate accuracy decreases with B'),
    V.Claim('claim8a', 'fig5b', 'van der Maaten & Hannun 2020, §4.2',
            'all methods lose accuracy as the number of classes C grows (§4.2); checked as: for every method the '
            'mean accuracy at the smallest C above the one at the largest C, {beyond}, and the curve of the means'
            ' falling with C (Spearman ρ < 0)'),
    V.Claim('claim9a', 'fig6a', 'van der Maaten & Hannun 2020, §4.2',
            'loss perturbation: accuracy is hump-shaped in λ — overfits the noise for small λ, underfits for '
            'large λ (§4.2)'),
    V.Claim('claim9c', 'fig6b', 'van der Maaten & Hannun 2020, §4.2',
            'subsample-and-aggregate: larger T helps, but accuracy deteriorates for very large T (§4.2)'),
    V.Claim('claim5a', 'fig3', 'van der Maaten & Hannun 2020, §4.2',
            'subsample-and-aggregate benefits the most from increasing δ (§4.2); checked as: its accuracy gain '
            "from the smallest δ to δ = {x1:g} above every other method's (prediction sensitivity excluded: claim"
            ' 5b), {beyond}'),
    V.Claim('claim5c', 'fig3', 'van der Maaten & Hannun 2020, §4.2',
            'loss perturbation, DP-SGD and model sensitivity work well even at very small δ (§4.2); checked as: '
            'each loses less than 0.1 accuracy from δ = {v0:g} to the smallest δ, {beyond}'),
    V.Claim('claim6a', 'fig4', 'van der Maaten & Hannun 2020, §4.2',
            'subsample-and-aggregate is best at small N (§4.2)'),
    V.Claim('claim6b', 'fig4', 'van der Maaten & Hannun 2020, §4.2',
            'loss perturbation and model sensitivity do well at large N (§4.2)'),
    V.Claim('claim7', 'fig5a', 'van der Maaten & Hannun 2020, §4.2',
            'loss perturbation and model sensitivity are more competitive when D is small (§4.2); checked as: for'
            " each, its accuracy minus the best other method's larger at the smallest D than at the largest, "
            '{beyond}'),
    V.Claim('claim8b', 'fig5b', 'van der Maaten & Hannun 2020, §4.2',
            'the ranking of the methods appears largely independent of C (§4.2); checked as: the mean over the '
            "informative C of the concordance (concordant − discordant pairs of methods)/pairs between that C's "
            "ranking and the overall ranking ≥ 0.5, a pair's order counting only where it is decided beyond "
            '{v0:g} standard errors (an undecided pair can go either way: holds when even the lowest concordance '
            'reaches 0.5, does not hold when even the highest stays below)'),
    V.Claim('claim9b', 'fig6a', 'van der Maaten & Hannun 2020, §4.2',
            'the optimal λ depends on ε (§4.2); checked as: for two ε curves the sets of λ whose mean accuracy is'
            " within {v0:g} standard errors of the curve's best are disjoint (does not hold when every curve has "
            'the same single best λ beyond them)'),
    V.Claim('claim10a', 'fig7b', 'van der Maaten & Hannun 2020, §4.3',
            'ε = 1: DP-SGD surpasses subsample-and-aggregate for B ⪆ 5 (§4.3); checked as: DP-SGD more accurate '
            'than subsample-and-aggregate at every B ≥ 20, {beyond}'),
    V.Claim('claim10b', 'fig7a', 'van der Maaten & Hannun 2020, §4.3',
            'B = 10: subsample-and-aggregate beats DP-SGD only when ε is large (§4.3)'),
    V.Claim('claim10c', 'fig7a', 'van der Maaten & Hannun 2020, §4.3',
            'even at ε = 5 the best private model underperforms the non-private one by ≥ 30% (§4.3; paper: 86.6% '
            "non-private on CIFAR-10); checked as: at ε = 5 every private method's mean accuracy below 70 % of "
            'the non-private mean, {beyond}'),
    V.Claim('claim5b', 'fig3', 'van der Maaten & Hannun 2020, §4.2',
            'prediction sensitivity appears to require unacceptably high values of δ (§4.2); checked as: at every'
            ' δ ≤ 1/N its accuracy below chance + {chance_margin:g}, or at every such δ below half the best other'
            " method's, {beyond}"),
)
