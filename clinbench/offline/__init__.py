"""Offline policy learning from logged episodes (``docs/offline.md``).

:mod:`~clinbench.offline.collect` plays behaviour agents on training worlds,
:mod:`~clinbench.offline.dataset` writes and reads the datasets (Minari's format,
extra ``offline``), :mod:`~clinbench.offline.splits` selects a split's episodes,
:mod:`~clinbench.offline.protocol` fits an offline agent on them and evaluates it
online, and ``bc``, ``rwbc``, ``learned_reward`` and ``iql`` are the agents, one
module each on :mod:`~clinbench.offline.base`. Everything but the dataset files runs on
the core install.
"""

import importlib.util

INSTALL_HINT = 'pip install -c constraints.txt -e ".[offline]"'


def available() -> bool:
    """Whether Minari (the dataset format) is installed."""
    return importlib.util.find_spec("minari") is not None
