"""The README's examples run as printed (the command line: tests/test_cli.py)."""
import re
import warnings
from pathlib import Path


README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)         # the examples draw pictures into the working directory
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
