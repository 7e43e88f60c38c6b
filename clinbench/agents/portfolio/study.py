"""The portfolio family's offline prediction study: F1 per split with intervals and
paired tests, and each predictor's online value (docs/environments.md, Part III.3).

The paper's setting ("Learning Clinical-Trial Strategy: Offline Policy Training for
Decision Agents", arXiv 2608.03606) at its size: per dataset seed (the sweep's seeds),
the 45-program preset of ``develop``; per split (drug, sponsor, class, temporal),
``bc``, ``rwbc``, ``learned_reward`` and ``iql`` fitted on the training episodes, and
every predictor scored on the test episodes. Micro F1 pools all seeds' test episodes;
its 95 % interval is a percentile bootstrap over programs (scipy.stats.bootstrap), the
program being the independent unit; each comparison is a paired permutation test over
programs (each program's predictions swapped between the two predictors;
scipy.stats.permutation_test), Holm-adjusted over the study's comparisons. The temporal
split is contamination-clean for the learners too: they train only on decisions whose
labels are public before the cutoff, and the value-weighted ones weigh them by the value
realised by the cutoff. Online, each predictor (the learners fitted on all of its seed's
episodes) plays 96 fresh ``develop`` worlds per seed (world seeds 300000 + 96 seed + w,
disjoint from the references' and from each other seed's), scored as the sweep scores them.

It does not fit the sweep's cells (one agent, task and seed each): the learners are
fitted per split and the statistics pool seeds over programs. It is registered as the
family's study (:mod:`clinbench.studies`): ``clinbench sweep`` runs it for the sweep's
seeds, its report shows it and its charts are drawn with the others. No cell runs this
module, so it is not part of the cells' code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from clinbench.agents.context import AgentContext
from clinbench.agents.portfolio.imitation import (
    ImitationPolicy,
    entry_features,
    episode_returns,
    rwbc_weights,
)
from clinbench.agents.portfolio.iql import fit_iql
from clinbench.agents.portfolio.learned_reward import fit_learned_reward
from clinbench.agents.portfolio.predictor_agent import PredictorAgent
from clinbench.agents.portfolio.predictors import heuristic, random_portfolio, repeat_last
from clinbench.agents.portfolio.references import play
from clinbench.env.portfolio.metrics import indication_set, strict_set
from clinbench.env.portfolio.offline import build_dataset
from clinbench.env.portfolio.params import TASKS
from clinbench.env.portfolio.simulator import PortfolioEnv
from clinbench.env.portfolio.splits import SPLITS, make_split
from clinbench.env.portfolio.state import realised_value
from clinbench.stats.multiple import holm
from clinbench.studies import Study

if TYPE_CHECKING:
    from matplotlib.figure import Figure

TASK = "develop"
PROGRAMS = 45
PREDICTORS = ("random", "repeat_last", "heuristic", "bc", "rwbc", "learned_reward", "iql")
#: (a, b): "a differs from b" per split
COMPARISONS = (("rwbc", "bc"), ("learned_reward", "bc"), ("iql", "bc"), ("bc", "heuristic"),
               ("heuristic", "repeat_last"), ("heuristic", "random"))
ONLINE_WORLDS = 96
ONLINE_BASE = 300_000
RESAMPLES = 9_999
#: where each predictor's label sits beside its point (points), so none overlap
LABEL_OFFSETS = {"random": (5, 5), "repeat_last": (5, -11), "heuristic": (-52, 6),
                 "bc": (6, 4), "rwbc": (6, -11), "learned_reward": (-80, -12),
                 "iql": (6, -4)}
#: random's draws and the tests' resamples
STUDY_SEED = 2608
#: an extra predictor: a name and a function of an offline episode (e.g. a language model)
Predictor = Callable[[Any], Any]


# ---------------------------------------------------------------------- statistics
def micro_f1(hits: np.ndarray, size: np.ndarray) -> float:
    """2 sum(hits) / sum(size) (1 when every set is empty), over programs' pooled counts."""
    total = float(np.sum(size))
    return 1.0 if total == 0 else 2.0 * float(np.sum(hits)) / total


def f1_interval(hits: np.ndarray, size: np.ndarray, seed: int) -> tuple[float, float]:
    """95 % percentile bootstrap interval of micro F1, programs resampled ((1, 1) when
    every set is empty, as :func:`micro_f1`)."""
    if float(np.sum(size)) == 0:
        return 1.0, 1.0
    res = stats.bootstrap(
        (hits, size), lambda h, s, axis=-1: 2 * h.sum(axis) / np.maximum(s.sum(axis), 1e-12),
        paired=True, vectorized=True, n_resamples=RESAMPLES, method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def paired_test(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], seed: int
) -> tuple[float, float]:
    """Difference of micro F1 (a - b) and its two-sided paired permutation p-value: each
    program's counts are swapped between a and b at random."""
    table = np.concatenate([np.column_stack(a), np.column_stack(b)])
    n = len(a[0])

    def diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        hx, sx = table[x, 0], table[x, 1]
        hy, sy = table[y, 0], table[y, 1]
        return 2 * hx.sum(axis) / np.maximum(sx.sum(axis), 1e-12) - 2 * hy.sum(axis) / np.maximum(
            sy.sum(axis), 1e-12)

    res = stats.permutation_test(
        (np.arange(n), np.arange(n, 2 * n)), diff, permutation_type="samples",
        vectorized=True, n_resamples=RESAMPLES, alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    return float(res.statistic), float(res.pvalue)



# ---------------------------------------------------------------------- the study
def _counts(pred, gold, view) -> tuple[int, int]:
    p, t = view(pred), view(gold)
    return len(p & t), len(p) + len(t)


def fit_learners(episodes, features, returns) -> dict[str, ImitationPolicy]:
    """The four offline learners fitted on the same episodes."""
    return {
        "bc": ImitationPolicy.fit(episodes, features=features),
        "rwbc": ImitationPolicy.fit(episodes, rwbc_weights(returns), features),
        "learned_reward": fit_learned_reward(episodes, features, returns),
        "iql": fit_iql(episodes, features, returns),
    }


def label_public_month(history, month: int) -> int:
    """When the last registry entry of the trials started at decision ``month`` is public
    (``month`` itself when nothing started)."""
    ids = {t.id for t in history.trials if t.start_month == month}
    return max((r.month for r in history.records if r.kind == "registry"
                and r.fields.get("status") == "recruiting" and r.fields.get("trial") in ids),
               default=month)


def value_known_at(history, month: int) -> float:
    """The program's net value as far as it is public at ``month`` ($M, discounted to its
    start): the approvals granted and the costs of the trials whose registry entry is
    public by then (a trial started before ``month`` but registered after it is not)."""
    public = {r.fields.get("trial") for r in history.records
              if r.kind == "registry" and r.fields.get("status") == "recruiting"
              and r.month <= month}
    trials = [t for t in history.trials if t.id in public]
    parts = realised_value(history.program, trials, month)
    return parts["value"] - parts["cost"]


def training_set(split, histories, cutoff: int) -> tuple[list, dict[str, float]]:
    """The split's training episodes and each program's return. The temporal split is the
    contamination-clean holdout: it trains only on decisions whose labels (registry
    entries) are public before the cutoff, weighted by the value realised by then; the
    group splits hold out whole programs, so their training programs' whole lives count."""
    by_id = {h.program.id: h for h in histories}
    if split.name != "temporal":
        return list(split.train), {k: h.value["value"] - h.value["cost"] for k, h in by_id.items()}
    train = [e for e in split.train
             if label_public_month(by_id[e.program_id], e.month) < cutoff]
    return train, {k: value_known_at(h, cutoff - 1) for k, h in by_id.items()}


def seed_offline(seed: int, programs: int, extra: dict[str, Predictor]) -> list[dict]:
    """One row per (split, test episode, predictor) of dataset seed ``seed``: F1 counts."""
    rows = []
    params = TASKS[TASK]
    data = build_dataset(params, seed, programs)
    feats = {id(e): entry_features(e) for e in data.episodes}
    for k, name in enumerate(SPLITS):
        split = make_split(data.episodes, name, params.cutoff_month, seed=seed)
        train, value = training_set(split, data.histories, params.cutoff_month)
        train_feats = [feats[id(e)] for e in train]
        returns = episode_returns(train, value)
        learnt = fit_learners(train, train_feats, returns)
        rng = np.random.default_rng([STUDY_SEED, seed, k])
        for e in split.test:
            preds = {
                "random": random_portfolio(e, rng),
                "repeat_last": repeat_last(e),
                "heuristic": heuristic(e),
                **{name: p.predict(e, feats[id(e)]) for name, p in learnt.items()},
                **{name: predict(e) for name, predict in extra.items()},
            }
            for predictor, pred in preds.items():
                hi, si = _counts(pred, e.label, indication_set)
                hs, ss = _counts(pred, e.label, strict_set)
                rows.append({
                    "seed": seed, "split": name, "program": e.program_id, "month": e.month,
                    "predictor": predictor, "hits_ind": hi, "size_ind": si,
                    "hits_strict": hs, "size_strict": ss,
                })
    return rows


def seed_online(
    seed: int, programs: int, worlds: int, extra: dict[str, Predictor]
) -> dict[str, list[dict]]:
    """Each predictor's episodes (score, net value) on ``worlds`` fresh ``develop`` worlds,
    the learners fitted on all of dataset seed ``seed``'s episodes; the worlds follow
    from the seed's value (not its position in the list: any order, the same numbers)."""
    params = TASKS[TASK]
    env = PortfolioEnv(params)
    data = build_dataset(params, seed, programs)
    value = {h.program.id: h.value["value"] - h.value["cost"] for h in data.histories}
    feats = [entry_features(e) for e in data.episodes]
    learnt = fit_learners(data.episodes, feats, episode_returns(data.episodes, value))
    rng = np.random.default_rng([STUDY_SEED, seed, 99])
    predictors = {
        "random": lambda e, rng=rng: random_portfolio(e, rng),
        "repeat_last": repeat_last, "heuristic": heuristic,
        **{name: p.predict for name, p in learnt.items()},
        **extra,
    }
    out: dict[str, list[dict]] = {}
    for name, predictor in predictors.items():
        agent = PredictorAgent(AgentContext.of(env), predictor)
        out[name] = []
        for w in range(worlds):
            world = ONLINE_BASE + seed * worlds + w
            info = play(env, agent, world, agent_seed=world)
            out[name].append({"score": info["score"], "npv": info["npv"]})
    return out


def online_summary(episodes: dict[str, list[dict]]) -> dict[str, dict[str, float]]:
    """Per predictor: mean online score, its standard error, mean net value, worlds."""
    out = {}
    for name, eps in episodes.items():
        s = np.array([e["score"] for e in eps])
        out[name] = {
            "score": float(s.mean()), "score_se": float(s.std(ddof=1) / np.sqrt(s.size)),
            "npv": float(np.mean([e["npv"] for e in eps])), "worlds": int(s.size),
        }
    return out


@dataclass(frozen=True)
class PredictionStudy:
    """The study's size: programs per dataset seed, online worlds per seed (the defaults
    are the paper's size; tests run a smaller one)."""

    programs: int = PROGRAMS
    online_worlds: int = ONLINE_WORLDS

    @classmethod
    def of_size(cls, size: str) -> PredictionStudy:
        """``full``: the paper's size; ``quick``: 8 programs and 2 online worlds per seed
        (every split still has test programs; 3.1 s for three seeds on one core, 7.7 s at
        12 programs and 4 worlds)."""
        return cls() if size == "full" else cls(programs=8, online_worlds=2)

    def run(
        self, seeds: Sequence[int], jobs: int = 1, extra: dict[str, Predictor] | None = None
    ) -> dict[str, Any]:
        """The study's results for dataset seeds ``seeds``: each seed's offline rows and
        online episodes in a process of its own (``jobs`` at a time), the same numbers
        for any ``jobs``; an ``extra`` predictor (not picklable, say) runs here."""
        extra = extra or {}
        if jobs > 1 and not extra:
            from joblib import Parallel, delayed

            # one batch of both halves, so no worker idles between them
            done = Parallel(n_jobs=jobs, backend="loky")(
                [
                    *(delayed(seed_online)(s, self.programs, self.online_worlds, {})
                      for s in seeds),
                    *(delayed(seed_offline)(s, self.programs, {}) for s in seeds),
                ]
            )
            online, offline = done[: len(seeds)], done[len(seeds):]
        else:
            offline = [seed_offline(s, self.programs, extra) for s in seeds]
            online = [seed_online(s, self.programs, self.online_worlds, extra) for s in seeds]
        episodes: dict[str, list[dict]] = {}
        for per_seed in online:
            for name, eps in per_seed.items():
                episodes.setdefault(name, []).extend(eps)
        rows = [r for per_seed in offline for r in per_seed]
        return analyse(rows, online_summary(episodes), list(seeds), self.programs)


def analyse(rows: list[dict], online: dict, seeds: list[int], programs: int) -> dict:
    """Per split and predictor: micro F1 (indication, strict) with intervals; the tests."""
    names = list(dict.fromkeys(r["predictor"] for r in rows))
    by: dict[tuple[str, str], dict[tuple[int, str], list[int]]] = {}
    for r in rows:
        cell = by.setdefault((r["split"], r["predictor"]), {})
        acc = cell.setdefault((r["seed"], r["program"]), [0, 0, 0, 0])
        for j, key in enumerate(("hits_ind", "size_ind", "hits_strict", "size_strict")):
            acc[j] += r[key]

    def arrays(split: str, predictor: str) -> np.ndarray:
        cell = by[(split, predictor)]
        return np.array([cell[k] for k in sorted(cell)], dtype=float)

    table, tests = [], []
    for k, split in enumerate(SPLITS):
        for j, predictor in enumerate(names):
            a = arrays(split, predictor)
            row = {"split": split, "predictor": predictor, "programs": len(a),
                   "episodes": sum(1 for r in rows if r["split"] == split
                                   and r["predictor"] == predictor)}
            for view, cols in (("indication", (0, 1)), ("strict", (2, 3))):
                h, s = a[:, cols[0]], a[:, cols[1]]
                lo, hi = f1_interval(h, s, seed=STUDY_SEED + 10 * k + j)
                row[view] = {"f1": micro_f1(h, s), "low": lo, "high": hi}
            table.append(row)
        for i, (x, y) in enumerate(COMPARISONS):
            ax, ay = arrays(split, x), arrays(split, y)
            for view, cols in (("indication", (0, 1)), ("strict", (2, 3))):
                d, p = paired_test(
                    (ax[:, cols[0]], ax[:, cols[1]]), (ay[:, cols[0]], ay[:, cols[1]]),
                    seed=STUDY_SEED + 100 * k + 10 * i + len(view),
                )
                tests.append({"split": split, "a": x, "b": y, "view": view, "diff": d, "p": p})
    for t, adj in zip(tests, holm([t["p"] for t in tests]), strict=True):
        t["p_holm"] = float(adj)
        t["significant"] = bool(adj < 0.05)
    return {
        "task": TASK, "seeds": seeds, "programs_per_seed": programs,
        "online_worlds": next(iter(online.values()))["worlds"], "predictors": names, "f1": table,
        "tests": tests,
        "online": online,
    }


# ---------------------------------------------------------------------- rendering
def markdown(results: dict) -> str:
    """The study's section of a report (its own headings one level below the section's)."""
    lines = [
        (
            "At a decision date, predict the trial portfolio a drug program's sponsor starts "
            "next from the evidence public by then (\"Learning Clinical-Trial Strategy: "
            "Offline Policy Training for Decision Agents\", arXiv 2608.03606). "
            f"Task `{results['task']}`, {results['programs_per_seed']} programs per dataset "
            f"seed, seeds {' '.join(map(str, results['seeds']))}; the learners fitted on each "
            "split's training episodes. Micro F1 (per cent) on each split's test episodes, "
            "pooled over the seeds, with 95 % percentile-bootstrap intervals over programs."
        ),
        "",
        "| split | predictor | programs | episodes | indication F1 | strict F1 |",
        "|---|---|---|---|---|---|",
    ]
    for r in results["f1"]:
        cells = [f"{100 * r[v]['f1']:.1f} [{100 * r[v]['low']:.1f}, {100 * r[v]['high']:.1f}]"
                 for v in ("indication", "strict")]
        lines.append(f"| {r['split']} | {r['predictor']} | {r['programs']} | {r['episodes']} | "
                     f"{cells[0]} | {cells[1]} |")
    lines += [
        "",
        "### Paired tests (F1)",
        "",
        (
            "Difference of micro F1 (percentage points, a - b), two-sided paired permutation "
            f"test over programs ({RESAMPLES:,} resamples), Holm-adjusted over all "
            f"{len(results['tests'])} comparisons."
        ),
        "",
        "| split | a | b | view | a - b | p | p (Holm) | significant |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in results["tests"]:
        lines.append(
            f"| {t['split']} | {t['a']} | {t['b']} | {t['view']} | {100 * t['diff']:+.1f} | "
            f"{t['p']:.4f} | {t['p_holm']:.4f} | {'yes' if t['significant'] else 'no'} |"
        )
    lines += [
        "",
        "### Online value of the predictors",
        "",
        (
            f"Each predictor played on {results['online_worlds']} fresh `{results['task']}` "
            "worlds (the online task's score; mean ± standard error; net value in $M)."
        ),
        "",
        "| predictor | online score | mean net value ($M) |",
        "|---|---|---|",
    ]
    online = results["online"]
    for name in [*(n for n in results["predictors"] if n in online),
                 *(n for n in online if n not in results["predictors"])]:
        o = online[name]
        lines.append(f"| {name} | {o['score']:.3f} ± {o['score_se']:.3f} | {o['npv']:.0f} |")
    return "\n".join(lines) + "\n"




# ---------------------------------------------------------------------- charts
def f1_by_split(results: dict, width: float) -> Figure:
    """Indication and strict micro F1 per split and predictor, with their intervals."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(width, width * 0.38), sharey=True)
    names = results["predictors"]
    bar = 0.8 / len(names)
    for ax, view in zip(axes, ("indication", "strict"), strict=True):
        for j, predictor in enumerate(names):
            rs = [r for r in results["f1"] if r["predictor"] == predictor]
            x = np.arange(len(rs)) + (j - (len(names) - 1) / 2) * bar
            f = np.array([100 * r[view]["f1"] for r in rs])
            err = np.array([[100 * (r[view]["f1"] - r[view]["low"]) for r in rs],
                            [100 * (r[view]["high"] - r[view]["f1"]) for r in rs]])
            ax.bar(x, f, bar, yerr=err, label=predictor, capsize=1.5)
        ax.set_xticks(np.arange(len(SPLITS)), SPLITS)
        ax.set_title(f"{view} F1 (micro, %)")
    axes[0].set_ylabel("F1 on the test episodes (%)")
    axes[1].legend(fontsize="small", ncols=1, loc="upper right")
    fig.tight_layout()
    return fig


def value_vs_f1(results: dict, width: float) -> Figure:
    """Each predictor's online score (95 % interval) against its mean indication F1."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width * 0.5, width * 0.4))
    for predictor in results["predictors"]:
        rs = [r for r in results["f1"] if r["predictor"] == predictor]
        f1 = 100 * np.mean([r["indication"]["f1"] for r in rs])
        o = results["online"][predictor]
        ax.errorbar(f1, o["score"], yerr=1.96 * o["score_se"], fmt="o", capsize=2)
        ax.annotate(predictor, (f1, o["score"]), textcoords="offset points",
                    xytext=LABEL_OFFSETS.get(predictor, (6, 4)), fontsize="small")
    ax.set_xlabel("indication F1, mean over splits (%)")
    ax.set_ylabel(f"online score ({results['task']})")
    fig.tight_layout()
    return fig


STUDY = Study(
    name="portfolio_prediction",
    family="portfolio",
    title="Offline prediction (portfolio): F1 per split and online value",
    run=lambda seeds, jobs, size: PredictionStudy.of_size(size).run(seeds, jobs),
    markdown=markdown,
    charts={"portfolio_f1_by_split": f1_by_split, "portfolio_value_vs_f1": value_vs_f1},
    modules=(__name__, "clinbench.stats.multiple"),
)
