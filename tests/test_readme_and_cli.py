"""The README's examples run as printed, and the command line prints the bundled default."""
import re
import warnings
from pathlib import Path

from mlsysim_sym.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 2
    for block in blocks:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # the examples use batches below dp on purpose
            exec(compile(block, "README.md", "exec"), {})


def test_readme_gives_the_two_commands_and_ci_runs_the_test_one():
    text = README.read_text()
    ci = (README.parent / ".ci" / "run").read_text()
    test_cmd = "python3 -m venv .venv && . .venv/bin/activate && pip install -q -e '.[test]' && python -m pytest"
    assert "pip install . && mlsysim-sym" in text
    assert test_cmd in text and test_cmd in ci


def test_cli_prints_the_default_breakdown(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    # docs/contract.md §8 row 1: Llama3_70B on Research_256, b256 tp8 pp4 m8
    assert "Llama3_70B on Research_256" in out
    assert "step time T_step           3368.627 ms" in out
    assert "DP communication            618.450 ms" in out
    assert "scaling efficiency           0.5215" in out


def test_cli_reports_bad_input_without_a_traceback(capsys):
    assert main(["--tp", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mlsysim-sym: error: Infeasible 4D Parallelism: TP(3) * PP(4) * EP(1)")
    assert main(["--fleet", "Research_512"]) == 2
    assert "unknown fleet 'Research_512'" in capsys.readouterr().err


def test_cli_rejects_non_finite_numbers(capsys):
    import pytest

    with pytest.raises(SystemExit) as exc:
        main(["--efficiency", "nan"])
    assert exc.value.code == 2
    assert "--efficiency: must be a finite number, got nan" in capsys.readouterr().err
