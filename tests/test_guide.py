"""docs/guide.md as a new user meets it: every Python example runs and prints what the guide shows
(doctest, one namespace in reading order), every shell example runs through bash and prints what the
guide shows (stdout and stderr), every --plot command writes a PNG, and every picture the guide shows
is in docs/guide/ (``python tools/guide_pictures.py`` draws them with the guide's own commands)."""
import doctest
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guide.md"
sys.path.insert(0, str(ROOT / "tools"))
from guide_pictures import plot_commands, shell_examples  # noqa: E402


def test_the_python_examples_print_what_the_guide_shows():
    blocks = re.findall(r"```pycon\n(.*?)```", GUIDE.read_text(), re.S)
    assert len(blocks) >= 8
    test = doctest.DocTestParser().get_doctest("\n".join(blocks), {}, "docs/guide.md", str(GUIDE), 0)
    assert len(test.examples) >= 35
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test, out=sys.stdout.write)
    assert runner.failures == 0


def _env():
    bindir = str(Path(shutil.which("mlsysim-sym")).parent)
    return {**os.environ, "PATH": bindir + os.pathsep + str(Path(sys.executable).parent) + os.pathsep
            + os.environ.get("PATH", ""), "PYTHONWARNINGS": ""}


@pytest.fixture(scope="module")
def reader_dir(tmp_path_factory):
    """One directory for the guide's shell examples, as a reader's: a file one command writes (a plan), the next
    reads."""
    return tmp_path_factory.mktemp("guide")


@pytest.mark.parametrize("command, expected", shell_examples(GUIDE.read_text()),
                         ids=lambda x: x[:60] if isinstance(x, str) else "")
def test_the_shell_examples_print_what_the_guide_shows(command, expected, reader_dir):
    tmp_path = reader_dir
    p = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=tmp_path, env=_env(),
                       timeout=300)
    assert p.stdout + p.stderr == expected
    errors = "mlsysim-sym: error:" in expected
    assert p.returncode == (2 if errors else 0)
    for name in re.findall(r"--plot (\S+)", command):
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_every_picture_the_guide_shows_is_drawn_by_a_guide_command():
    shown = set(re.findall(r"!\[[^\]]*\]\(guide/([^)]+)\)", GUIDE.read_text()))
    drawn = {name for _, name in plot_commands(GUIDE.read_text())}
    assert shown == drawn == {"breakdown.png", "heatmap.png", "tornado.png"}
    for name in shown:
        data = (GUIDE.parent / "guide" / name).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 20_000


def test_the_readme_links_the_guide():
    assert "docs/guide.md" in (ROOT / "README.md").read_text()
