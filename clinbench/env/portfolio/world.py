"""The generative model's hidden truth: the universe of classes and sponsors, and programs.

A universe (one per seed) holds the mechanism classes with their latent mean effect and
toxicity, the sponsors with their size, budget and behaviour style, and the indications
a new standard of care reaches after the cutoff. A program (universe seed plus program
index) is one drug developed by one sponsor: its class, modality, whether it has a
selection biomarker, its start month, its candidate indications (tumour type x line) and
their latent true effects. Effects are correlated within a drug (a drug term shared by
its indications) and within a class (a class term shared by its drugs), so evidence on
one indication or one drug of a class informs the others. Everything is drawn from the
seed alone, by ``numpy`` Generators derived from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from clinbench.env.portfolio.params import (
    CLASS_MODALITY,
    CLASSES,
    LINE_SHARE,
    LINES,
    MODALITIES,
    SPONSOR_SIZES,
    STYLES,
    TUMOUR_INCIDENCE,
    TUMOURS,
    PortfolioParams,
)

#: Mixed into every seed so this family's streams differ from the other families'.
FAMILY_TAG = 0x9F07
#: Sub-stream tags: the universe, a program, a trial's luck.
UNIVERSE, PROGRAM, TRIAL = 0, 1, 2
ALL_INDICATIONS = tuple(f"{t}_{line}" for t in TUMOURS for line in LINES)


@dataclass(frozen=True)
class Sponsor:
    """A company: its size sets its budget; its style its behaviour policy."""

    id: str
    size: str
    style: str
    #: 0 (cautious) to 1 (bold): how readily it advances on a marginal readout
    risk_appetite: float
    budget: float


@dataclass(frozen=True)
class Indication:
    """A candidate indication of one program and its hidden truth."""

    key: str
    tumour: str
    line: str
    #: US new cases per year (thousands) in this line
    patients: float
    #: value of an approval ($M, undiscounted)
    value: float
    #: latent true effect of the drug here (standard, unselected, mono design)
    effect: float
    #: a new standard of care reaches this indication at the cutoff
    regime: bool


@dataclass(frozen=True)
class Universe:
    """What every program of one seed shares."""

    seed: int
    params: PortfolioParams
    class_effect: tuple[float, ...]
    class_tox: tuple[float, ...]
    sponsors: tuple[Sponsor, ...]
    regime_indications: frozenset[str]


@dataclass(frozen=True, eq=False)
class Program:
    """One drug developed by one sponsor: the hidden truth of an episode."""

    universe: Universe
    index: int
    id: str
    drug_id: str
    drug_class: str
    modality: str
    biomarker: bool
    sponsor: Sponsor
    start_month: int
    indications: tuple[Indication, ...]
    #: latent toxicity (higher: worse); a Phase I passes below ``tox_limit``
    toxicity: float
    #: the seed of its trials' luck (the universe's, unless a fixed world replays one
    #: program with other luck)
    luck_seed: int

    @cached_property
    def index_of(self) -> dict[str, int]:
        return {ind.key: i for i, ind in enumerate(self.indications)}

    @property
    def params(self) -> PortfolioParams:
        return self.universe.params


def draw_universe(params: PortfolioParams, seed: int) -> Universe:
    """Classes, sponsors and the regime change of ``seed``."""
    rng = np.random.default_rng([FAMILY_TAG, seed, UNIVERSE])
    k = len(CLASSES)
    class_effect = rng.normal(0.0, params.class_sd, k)
    class_tox = rng.normal(0.0, params.class_tox_sd, k)
    sponsors = []
    for s in range(params.n_sponsors):
        size_i = int(rng.integers(len(SPONSOR_SIZES)))
        sponsors.append(
            Sponsor(
                id=f"S{s:03d}",
                size=SPONSOR_SIZES[size_i],
                style=STYLES[int(rng.integers(len(STYLES)))],
                risk_appetite=float(rng.uniform(0.2, 0.9)),
                budget=float(params.budget_by_size[size_i]),
            )
        )
    hit = rng.random(len(ALL_INDICATIONS)) < params.regime_share
    regime = frozenset(key for key, h in zip(ALL_INDICATIONS, hit, strict=True) if h)
    return Universe(
        seed=seed,
        params=params,
        class_effect=tuple(class_effect.tolist()),
        class_tox=tuple(class_tox.tolist()),
        sponsors=tuple(sponsors),
        regime_indications=regime,
    )


def draw_program(universe: Universe, index: int, luck_seed: int | None = None) -> Program:
    """Program ``index`` of ``universe``: its drug, sponsor, start and indications;
    ``luck_seed`` (default: the universe's seed) seeds its trials' noise."""
    p = universe.params
    rng = np.random.default_rng([FAMILY_TAG, universe.seed, PROGRAM, index])
    c = int(rng.integers(len(CLASSES)))
    drug_class = CLASSES[c]
    modality = (
        CLASS_MODALITY[drug_class] if rng.random() < 0.85
        else MODALITIES[int(rng.integers(len(MODALITIES)))]
    )
    biomarker = bool(rng.random() < p.biomarker_share)
    sponsor = universe.sponsors[int(rng.integers(len(universe.sponsors)))]
    lo, hi = p.start_window if p.start_window is not None else (p.start_min, p.start_max)
    steps = (hi - lo) // p.decision_months
    start = lo + p.decision_months * int(rng.integers(steps + 1))
    drug_term = float(rng.normal(0.0, p.drug_sd))
    chosen = rng.choice(len(ALL_INDICATIONS), size=p.n_indications, replace=False)
    noise = rng.normal(0.0, p.indication_sd, p.n_indications)
    indications = []
    for j, e in zip(sorted(chosen.tolist()), noise.tolist(), strict=True):
        key = ALL_INDICATIONS[j]
        tumour, line = key.rsplit("_", 1)
        patients = TUMOUR_INCIDENCE[tumour] * LINE_SHARE[line]
        indications.append(
            Indication(
                key=key,
                tumour=tumour,
                line=line,
                patients=patients,
                value=patients * p.value_per_patient,
                effect=p.effect_mean + universe.class_effect[c] + drug_term + e,
                regime=key in universe.regime_indications,
            )
        )
    toxicity = universe.class_tox[c] + float(rng.normal(0.0, p.drug_tox_sd))
    return Program(
        universe=universe,
        index=index,
        id=f"P{index:05d}",
        drug_id=f"D{index:05d}",
        drug_class=drug_class,
        modality=modality,
        biomarker=biomarker,
        sponsor=sponsor,
        start_month=start,
        indications=tuple(indications),
        toxicity=toxicity,
        luck_seed=universe.seed if luck_seed is None else luck_seed,
    )
