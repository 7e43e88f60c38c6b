"""One look for every chart: colours per agent, fonts, and deterministic files.

Each agent has a colour and a marker, fixed by its place in the report's agent order,
so an agent looks the same in every chart. The first eight colours are the Okabe-Ito
palette (safe for the common colour-vision deficiencies), the next eight Paul Tol's
muted and dark colours; markers differ too, so agents stay apart in greyscale and for
readers who cannot tell two colours apart. Neither repeats up to 16 agents. Files are
byte-identical when regenerated: bundled DejaVu fonts, text as paths in SVG, a fixed
``svg.hashsalt``, no dates or software tags in the metadata, fixed dpi.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
#: Paul Tol's muted / dark colours that are not close to an Okabe-Ito one, then grey.
TOL = ("#332288", "#882255", "#117733", "#999933", "#CC6677", "#AA4499", "#44AA99", "#888888")
PALETTE = OKABE_ITO + TOL
#: Filled markers first (they carry the colour best), then line markers.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "p", "h", "*", "d", "H", "+", "x")
FORMATS = ("svg", "png")

SCREEN = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "figure.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "svg.hashsalt": "clinbench",
    "svg.fonttype": "path",
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "savefig.dpi": 150,
    "figure.dpi": 100,
    "savefig.bbox": "tight",
    "savefig.pad_inches": 0.05,
    "path.simplify": True,
}
PAPER = {
    **SCREEN,
    "font.size": 7,
    "axes.titlesize": 7,
    "axes.labelsize": 7,
    "xtick.labelsize": 6,
    "ytick.labelsize": 6,
    "legend.fontsize": 6,
    "figure.titlesize": 8,
    "savefig.dpi": 300,
}
#: Figure widths in inches: a single and a double column of a two-column paper.
SINGLE_COLUMN, DOUBLE_COLUMN = 3.5, 7.16


def agent_colors(agents: list[str]) -> dict[str, str]:
    """A colour per agent, by its place in the report's agent order: the same results
    give the same charts whatever agents or extras are installed where they are drawn
    (16 distinct colours; a 17th agent repeats the first)."""
    return {a: PALETTE[i % len(PALETTE)] for i, a in enumerate(agents)}


def agent_markers(agents: list[str]) -> dict[str, str]:
    """A marker per agent, by the same order as its colour (16 distinct markers)."""
    return {a: MARKERS[i % len(MARKERS)] for i, a in enumerate(agents)}


@contextmanager
def style(paper: bool = False) -> Iterator[None]:
    with plt.rc_context(PAPER if paper else SCREEN):
        yield


def save(
    fig: plt.Figure, folder: Path, name: str, formats: tuple[str, ...] = FORMATS
) -> list[Path]:
    """Write ``name.<fmt>`` for each format without any date or tool stamp."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = folder / f"{name}.{fmt}"
        metadata = {
            "svg": {"Date": None, "Creator": None},
            "png": {"Software": None},
            "pdf": {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
        }.get(fmt)
        fig.savefig(path, format=fmt, metadata=metadata)
        paths.append(path)
    plt.close(fig)
    return paths
