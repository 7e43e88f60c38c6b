"""The ``clinbench`` command line (entry point :func:`clinbench.cli.app.main`)."""
