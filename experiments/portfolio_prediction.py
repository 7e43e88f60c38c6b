"""The portfolio family's offline prediction study: F1 per split, and each predictor's
online value (docs/environments.md, Part III.3; docs/results.md).

    python experiments/portfolio_prediction.py            # runs it, writes its folder
    python experiments/portfolio_prediction.py --render   # report, charts from results.json
    python experiments/portfolio_prediction.py --check    # exit 1 if they are stale

Its folder is ``data/portfolio_prediction/``. ``--llm-model M [--llm-base-url URL]`` adds
a row for a language model with the date-gated retrieval scaffold
(:mod:`clinbench.llm.retrieval`; extra ``llm``; about 5,300 offline predictions and up to
14,400 online decisions, each several requests).

The paper's setting ("Learning Clinical-Trial Strategy: Offline Policy Training for
Decision Agents", arXiv 2608.03606) at its size: per dataset seed (1 7 21 42 123), the
45-program preset of ``develop``; per split (drug, sponsor, class, temporal), ``bc``,
``rwbc``, ``learned_reward`` and ``iql`` fitted on the training episodes, and every
predictor scored on the test episodes. Micro F1 pools all five seeds' test episodes;
its 95 % interval is a percentile bootstrap over programs (scipy.stats.bootstrap), the
program being the independent unit; each comparison is a paired permutation test over programs (each
program's predictions swapped between the two predictors; scipy.stats.permutation_test),
Holm-adjusted over the study's comparisons. The temporal split is contamination-clean
for the learners too: they train only on decisions whose labels are public before the
cutoff, and the value-weighted ones weigh them by the value realised by the cutoff.
Online, each predictor (the learners fitted on all of its seed's episodes) plays 96
fresh ``develop`` worlds per seed (seeds 300000 and up, disjoint from every sweep's and
the references'), scored as the sweep scores them.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import sys
import tempfile
from pathlib import Path

import clinbench  # first: it pins the BLAS kernel before numpy loads  # noqa: F401

# isort: split
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
from clinbench.env.portfolio.calendar import discount
from clinbench.env.portfolio.metrics import indication_set, strict_set
from clinbench.env.portfolio.offline import build_dataset
from clinbench.env.portfolio.params import TASKS
from clinbench.env.portfolio.simulator import PortfolioEnv
from clinbench.env.portfolio.splits import SPLITS, make_split
from clinbench.stats.multiple import holm

OUT = Path("data") / "portfolio_prediction"
#: the docs' copies of the charts (docs/results.md shows them)
DOCS_IMAGES = Path("docs") / "images"
TASK = "develop"
SEEDS = (1, 7, 21, 42, 123)
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


# ---------------------------------------------------------------------- statistics
def micro_f1(hits: np.ndarray, size: np.ndarray) -> float:
    """2 sum(hits) / sum(size) (1 when every set is empty), over programs' pooled counts."""
    total = float(np.sum(size))
    return 1.0 if total == 0 else 2.0 * float(np.sum(hits)) / total


def f1_interval(hits: np.ndarray, size: np.ndarray, seed: int) -> tuple[float, float]:
    """95 % percentile bootstrap interval of micro F1, programs resampled."""
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
    """The program's net value as far as it is realised at ``month`` ($M, discounted to
    its start): approvals granted and trial costs committed by then."""
    p, start = history.program.params, history.program.start_month
    worth = {ind.key: ind.value for ind in history.program.indications}
    approved: dict[str, int] = {}
    for t in history.trials:
        a = t.approval_month()
        if a is not None and a <= month:
            approved[t.design.indication] = min(a, approved.get(t.design.indication, a))
    value = sum(worth[k] * discount(m - start, p.discount_rate) for k, m in approved.items())
    cost = sum(t.cost * discount(t.start_month - start, p.discount_rate)
               for t in history.trials if t.start_month <= month)
    return value - cost


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


def run_offline(extra: dict | None = None) -> list[dict]:
    """One row per (seed, split, test episode, predictor) with its F1 counts."""
    rows = []
    params = TASKS[TASK]
    for seed in SEEDS:
        data = build_dataset(params, seed, PROGRAMS)
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
                    **{name: predict(e) for name, predict in (extra or {}).items()},
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


def run_online(extra: dict | None = None) -> dict[str, dict[str, float]]:
    """Each predictor's online score and net value on fresh ``develop`` worlds."""
    params = TASKS[TASK]
    env = PortfolioEnv(params)
    scores: dict[str, list[dict]] = {p: [] for p in (*PREDICTORS, *(extra or {}))}
    for i, seed in enumerate(SEEDS):
        data = build_dataset(params, seed, PROGRAMS)
        value = {h.program.id: h.value["value"] - h.value["cost"] for h in data.histories}
        feats = [entry_features(e) for e in data.episodes]
        learnt = fit_learners(data.episodes, feats, episode_returns(data.episodes, value))
        rng = np.random.default_rng([STUDY_SEED, seed, 99])
        predictors = {
            "random": lambda e, rng=rng: random_portfolio(e, rng),
            "repeat_last": repeat_last, "heuristic": heuristic,
            **{name: p.predict for name, p in learnt.items()},
            **(extra or {}),
        }
        for name, predictor in predictors.items():
            agent = PredictorAgent(AgentContext.of(env), predictor)
            for w in range(ONLINE_WORLDS):
                world = ONLINE_BASE + i * ONLINE_WORLDS + w
                info = play(env, agent, world, agent_seed=world)
                scores[name].append({"score": info["score"], "npv": info["npv"]})
    out = {}
    for name, eps in scores.items():
        s = np.array([e["score"] for e in eps])
        out[name] = {
            "score": float(s.mean()), "score_se": float(s.std(ddof=1) / np.sqrt(s.size)),
            "npv": float(np.mean([e["npv"] for e in eps])), "worlds": int(s.size),
        }
    return out


def analyse(rows: list[dict], online: dict) -> dict:
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
        "task": TASK, "seeds": list(SEEDS), "programs_per_seed": PROGRAMS,
        "online_worlds": ONLINE_WORLDS * len(SEEDS), "predictors": names, "f1": table,
        "tests": tests,
        "online": online,
    }


# ---------------------------------------------------------------------- rendering
def render_report(results: dict) -> str:
    lines = [
        "# Portfolio planning: the offline prediction study",
        "",
        (
            f"Task `{results['task']}`, {results['programs_per_seed']} programs per dataset "
            f"seed, seeds {' '.join(map(str, results['seeds']))} "
            "(`experiments/portfolio_prediction.py`). Micro F1 (per cent) on each split's "
            "test episodes, pooled over the seeds, with 95 % percentile-bootstrap intervals "
            "over programs."
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
        "## Paired tests",
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
        "## Online value",
        "",
        (
            f"Each predictor played on {results['online_worlds']} fresh `{results['task']}` "
            "worlds (the online task's score; mean ± standard error; net value in $M)."
        ),
        "",
        "| predictor | online score | mean net value ($M) |",
        "|---|---|---|",
    ]
    for name, o in results["online"].items():
        lines.append(f"| {name} | {o['score']:.3f} ± {o['score_se']:.3f} | {o['npv']:.0f} |")
    return "\n".join(lines) + "\n"


def render_charts(results: dict, folder: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    from clinbench.charts.style import DOUBLE_COLUMN, FORMATS, save, style

    paths = []
    with style():
        fig, axes = plt.subplots(1, 2, figsize=(DOUBLE_COLUMN, DOUBLE_COLUMN * 0.38), sharey=True)
        names = results["predictors"]
        width = 0.8 / len(names)
        for ax, view in zip(axes, ("indication", "strict"), strict=True):
            for j, predictor in enumerate(names):
                rs = [r for r in results["f1"] if r["predictor"] == predictor]
                x = np.arange(len(rs)) + (j - (len(names) - 1) / 2) * width
                f = np.array([100 * r[view]["f1"] for r in rs])
                err = np.array([[100 * (r[view]["f1"] - r[view]["low"]) for r in rs],
                                [100 * (r[view]["high"] - r[view]["f1"]) for r in rs]])
                ax.bar(x, f, width, yerr=err, label=predictor, capsize=1.5)
            ax.set_xticks(np.arange(len(SPLITS)), SPLITS)
            ax.set_title(f"{view} F1 (micro, %)")
        axes[0].set_ylabel("F1 on the test episodes (%)")
        axes[1].legend(fontsize="small", ncols=1, loc="upper right")
        fig.tight_layout()
        paths += save(fig, folder, "portfolio_f1_by_split", FORMATS)

        fig, ax = plt.subplots(figsize=(DOUBLE_COLUMN * 0.5, DOUBLE_COLUMN * 0.4))
        for predictor in names:
            rs = [r for r in results["f1"] if r["predictor"] == predictor]
            f1 = 100 * np.mean([r["indication"]["f1"] for r in rs])
            o = results["online"][predictor]
            ax.errorbar(f1, o["score"], yerr=1.96 * o["score_se"], fmt="o", capsize=2)
            ax.annotate(predictor, (f1, o["score"]), textcoords="offset points",
                        xytext=LABEL_OFFSETS.get(predictor, (6, 4)), fontsize="small")
        ax.set_xlabel("indication F1, mean over splits (%)")
        ax.set_ylabel("online score (develop)")
        fig.tight_layout()
        paths += save(fig, folder, "portfolio_value_vs_f1", FORMATS)
    return paths


def render(results: dict, folder: Path, docs: Path | None = None) -> list[Path]:
    """The report and charts into ``folder``; the charts mirrored into ``docs`` if given."""
    folder.mkdir(parents=True, exist_ok=True)
    report = folder / "report.md"
    report.write_text(render_report(results))
    charts = render_charts(results, folder / "charts")
    if docs is not None:
        docs.mkdir(parents=True, exist_ok=True)
        for p in charts:
            shutil.copyfile(p, docs / p.name)
    return [report, *charts]


def check(folder: Path, docs: Path | None = None) -> list[str]:
    """Files of ``folder`` (and chart copies in ``docs``) that the committed results.json
    does not regenerate exactly."""
    results = json.loads((folder / "results.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        fresh = render(results, Path(tmp))
        pairs = [(p, folder / p.relative_to(tmp)) for p in fresh]
        if docs is not None:
            pairs += [(p, docs / p.name) for p in fresh if p.parent.name == "charts"]
        return [
            str(committed) for p, committed in pairs
            if not committed.exists() or not filecmp.cmp(p, committed, shallow=False)
        ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--render", action="store_true", help="only the report and charts")
    parser.add_argument("--check", action="store_true", help="exit 1 if they are stale")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--llm-model", default="",
                        help="add an 'llm' row: this model with the retrieval scaffold")
    parser.add_argument("--llm-base-url", default="",
                        help="its OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    args = parser.parse_args(argv)
    if args.check:
        bad = check(args.out, DOCS_IMAGES if args.out == OUT else None)
        for b in bad:
            print(f"stale: {b}", file=sys.stderr)
        return 1 if bad else 0
    if not args.render:
        extra = {}
        if args.llm_model:
            from clinbench.llm.retrieval import RetrievalPredictor

            extra["llm"] = RetrievalPredictor(args.llm_model, args.llm_base_url).predict
        rows = run_offline(extra)
        results = analyse(rows, run_online(extra))
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    results = json.loads((args.out / "results.json").read_text())
    for p in render(results, args.out, DOCS_IMAGES if args.out == OUT else None):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
