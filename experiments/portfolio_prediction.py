"""The portfolio prediction study with a language model's row added.

    python experiments/portfolio_prediction.py --llm-model M [--llm-base-url URL]

The study itself (``clinbench.agents.portfolio.study``: F1 per split with intervals and
paired tests, online value) runs in every sweep that holds a portfolio task, and its
section and charts are in the sweep's report; the canonical run's are in
``data/sweep_results/``. This script adds an ``llm`` row: the model with the date-gated
retrieval scaffold (:mod:`clinbench.llm.retrieval`; extra ``llm``; about 5,300 offline
predictions and up to 14,400 online decisions, each several requests), for dataset seeds
``--seeds`` (default: the canonical five), and writes ``results.json``, ``report.md``
and the charts into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import clinbench  # first: it pins the BLAS kernel before numpy loads  # noqa: F401

# isort: split
from clinbench.agents.portfolio.study import STUDY, PredictionStudy
from clinbench.charts.style import DOUBLE_COLUMN, FORMATS, save, style


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--llm-model", required=True,
                        help="the model to add as an 'llm' row, with the retrieval scaffold")
    parser.add_argument("--llm-base-url", default="",
                        help="its OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 7, 21, 42, 123])
    parser.add_argument("--out", type=Path, default=Path("results") / "portfolio_prediction_llm")
    args = parser.parse_args(argv)
    from clinbench.llm.retrieval import RetrievalPredictor

    extra = {"llm": RetrievalPredictor(args.llm_model, args.llm_base_url).predict}
    results = PredictionStudy().run(args.seeds, jobs=1, extra=extra)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "report.md").write_text(f"# {STUDY.title}\n\n{STUDY.markdown(results)}")
    with style():
        for name, chart in STUDY.charts.items():
            for p in save(chart(results, DOUBLE_COLUMN), args.out / "charts", name, FORMATS):
                print(p)
    print(args.out / "report.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
