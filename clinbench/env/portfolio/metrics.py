"""Indication F1 and strict F1 of predicted portfolios against logged ones.

A portfolio is compared as a set. The indication view keeps only which indications get
a new trial; the strict view keeps indication, phase and the three design attributes
(randomised, biomarker-selected, combination). Per episode, F1 = 2 |P & T| / (|P| + |T|);
when both sets are empty (the sponsor started nothing and the prediction says so) the
episode's F1 is 1, and when exactly one is empty it is 0. Macro F1 averages episodes;
micro F1 pools the counts of all episodes, 2 sum |P & T| / (sum |P| + sum |T|), and is 1
when every set is empty. These conventions are sklearn's ``f1_score`` on multilabel
indicator rows with ``zero_division=1.0`` (``average="samples"`` and ``"micro"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from clinbench.env.portfolio.trials import TrialDesign


def indication_set(portfolio: Iterable[TrialDesign]) -> frozenset[str]:
    return frozenset(d.indication for d in portfolio)


def strict_set(portfolio: Iterable[TrialDesign]) -> frozenset[tuple]:
    return frozenset(
        (d.indication, d.phase, d.randomised, d.biomarker, d.combination) for d in portfolio
    )


def set_f1(predicted: frozenset, true: frozenset) -> float:
    """F1 of one episode; 1 when both sets are empty."""
    if not predicted and not true:
        return 1.0
    return 2.0 * len(predicted & true) / (len(predicted) + len(true))


def macro_f1(pairs: Sequence[tuple[frozenset, frozenset]]) -> float:
    """Mean per-episode F1 (``nan`` without episodes)."""
    if not pairs:
        return float("nan")
    return sum(set_f1(p, t) for p, t in pairs) / len(pairs)


def micro_f1(pairs: Sequence[tuple[frozenset, frozenset]]) -> float:
    """F1 of the pooled counts; 1 when every set is empty (``nan`` without episodes)."""
    if not pairs:
        return float("nan")
    hits = sum(len(p & t) for p, t in pairs)
    size = sum(len(p) + len(t) for p, t in pairs)
    return 1.0 if size == 0 else 2.0 * hits / size


def portfolio_f1(
    predicted: Sequence[Iterable[TrialDesign]], true: Sequence[Iterable[TrialDesign]]
) -> dict[str, float]:
    """Indication and strict F1, macro and micro, of aligned predicted / true portfolios."""
    if len(predicted) != len(true):
        raise ValueError(f"{len(predicted)} predictions for {len(true)} episodes")
    pred, gold = [list(p) for p in predicted], [list(t) for t in true]
    ind = [(indication_set(p), indication_set(t)) for p, t in zip(pred, gold, strict=True)]
    strict = [(strict_set(p), strict_set(t)) for p, t in zip(pred, gold, strict=True)]
    return {
        "indication_f1_macro": macro_f1(ind),
        "indication_f1_micro": micro_f1(ind),
        "strict_f1_macro": macro_f1(strict),
        "strict_f1_micro": micro_f1(strict),
    }
