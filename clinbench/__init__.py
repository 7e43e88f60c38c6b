"""clinbench: a benchmark for long-horizon decision agents on simulated clinical trials."""

__version__ = "0.1.0"
