"""The command line answers ``--help`` and argument errors without loading the numerical
stack (benchmarks/cli_startup.py measures the time; no timing is asserted here), and
``import clinbench`` still registers the Gymnasium ids when Gymnasium is loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import clinbench

ROOT = Path(clinbench.__file__).resolve().parents[1]
#: What the help and the argument errors must not wait for.
HEAVY = (
    "numpy",
    "pandas",
    "scipy",
    "scipy.stats",
    "matplotlib",
    "hydra",
    "omegaconf",
    "gymnasium",
    "joblib",
    "clinbench.config",
    "clinbench.stats",
    "clinbench.env",
)


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=False
    )


def _loaded_after(code: str) -> list[str]:
    run = _python(f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def test_the_cli_module_loads_nothing_heavy():
    assert _loaded_after("import clinbench.cli.app") == []


def test_help_and_an_argument_error_load_nothing_heavy():
    for argv in (["--help"], ["sweep", "--help"], ["sweep", "--seeds", "x"]):
        code = (
            "import contextlib, io, sys\n"
            "from clinbench.cli.app import main\n"
            f"sys.argv = ['clinbench', *{argv!r}]\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):\n"
            "    try:\n        main()\n    except SystemExit as exit:\n        code = exit.code\n"
            "assert code in (0, 2) and ('Usage' in out.getvalue() or 'error:' in out.getvalue())\n"
        )
        assert _loaded_after(code) == [], argv


def test_import_clinbench_registers_the_gym_ids_when_gymnasium_comes_later():
    code = (
        "import sys, clinbench\n"
        "assert 'gymnasium' not in sys.modules\n"
        "import gymnasium as gym\n"
        "env = gym.make('clinbench/Recruitment-easy_bench-v2')\n"
        "print(len([i for i in gym.registry if i.startswith('clinbench/')]))\n"
    )
    run = _python(code)
    assert run.returncode == 0, run.stderr
    from clinbench.env import env_ids

    assert int(run.stdout) == len(env_ids())


def test_subpackages_are_attributes_without_an_import():
    run = _python("import clinbench\nprint(clinbench.env.env_ids()[0])")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "recruitment/easy_bench"
    run = _python("import clinbench\nclinbench.no_such_thing")
    assert "AttributeError: module 'clinbench' has no attribute 'no_such_thing'" in run.stderr


def test_the_generic_config_imports_no_family_agent_mode_or_statistics():
    """config.py names no environment family or mode: they are imported when a config is
    validated, never when the config module is (no import circle through it)."""
    code = (
        "import sys, clinbench.config\n"
        "prefixes = ('clinbench.env', 'clinbench.agents', 'clinbench.offline', 'clinbench.stats',"
        " 'clinbench.sweep', 'clinbench.report', 'scipy', 'pandas')\n"
        "print(' '.join(m for m in sys.modules if m.startswith(prefixes)))\n"
    )
    run = _python(code)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == []
    run = _python("import sys, clinbench.offline.plan\nprint('clinbench.config' in sys.modules)")
    assert run.stdout.strip() == "False", run.stderr


def test_the_commands_default_results_folder_is_the_configs():
    """One default for every command: ``sweep`` writes where ``report`` and ``charts`` read."""
    from clinbench.cli.common import DEFAULT_RESULTS
    from clinbench.config import compose

    assert compose([]).results == DEFAULT_RESULTS.as_posix()


def test_each_protocol_and_report_default_lives_in_its_yaml_only():
    """The dataclasses declare the fields; conf/<group>/default.yaml gives every default
    (not a signature, a docstring and a YAML file at once)."""
    import dataclasses

    import yaml

    from clinbench.config import ProtocolConfig, ReportConfig, config_dir

    for cls, group in ((ProtocolConfig, "protocol"), (ReportConfig, "report")):
        given = yaml.safe_load((config_dir() / group / "default.yaml").read_text())
        for f in dataclasses.fields(cls):
            assert f.default is dataclasses.MISSING, f"{cls.__name__}.{f.name} has a default"
            assert f.default_factory is dataclasses.MISSING, f"{cls.__name__}.{f.name}"
            assert f.name in given, f"conf/{group}/default.yaml does not set {f.name}"


def test_a_config_without_a_default_names_where_it_lives(tmp_path, monkeypatch):
    import shutil

    from clinbench.config import ConfigError, config_dir, load

    conf = tmp_path / "conf"
    shutil.copytree(config_dir(), conf)
    protocol = conf / "protocol" / "default.yaml"
    protocol.write_text(
        "\n".join(ln for ln in protocol.read_text().splitlines() if not ln.startswith("oc_"))
    )
    monkeypatch.setenv("CLINBENCH_CONF_DIR", str(conf))
    try:
        load([])
    except ConfigError as exc:
        assert "protocol.oc_episodes is not set" in str(exc)
        assert "conf/protocol/default.yaml" in str(exc)
    else:
        raise AssertionError("a config without protocol.oc_episodes was accepted")
