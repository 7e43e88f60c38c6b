"""The global calendar: months counted from January 2000, decisions every six months."""

from __future__ import annotations

ORIGIN_YEAR = 2000


def month_label(month: int) -> str:
    """``"YYYY-MM"`` of a month index (0 is January 2000)."""
    year, m = divmod(int(month), 12)
    return f"{ORIGIN_YEAR + year:04d}-{m + 1:02d}"


def decision_months(start: int, horizon: int, step: int) -> tuple[int, ...]:
    """The ``horizon`` decision dates of a program whose Phase I starts at ``start``."""
    return tuple(start + k * step for k in range(horizon))


def discount(months: float, rate: float) -> float:
    """Present value of 1 paid ``months`` after the program's start at annual ``rate``."""
    return (1.0 + rate) ** (-max(0.0, months) / 12.0)
