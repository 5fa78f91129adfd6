"""Draw the pictures of docs/guide.md with the guide's own commands: every ``$ mlsysim-sym ... --plot
NAME`` of its shell examples, run in docs/guide/ (``python tools/guide_pictures.py``).

``shell_examples`` and ``plot_commands`` read the guide; tests/test_guide.py runs the same commands.
"""
import re
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide.md"


def shell_examples(text: str) -> List[Tuple[str, str]]:
    """``(command, expected stdout + stderr)`` of every ``$ ...`` line in the guide's console blocks."""
    out = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, expected = chunk.partition("\n")
            if command.rstrip().endswith("<< 'EOF'"):      # a here-document: the command runs through EOF
                body, _, expected = expected.partition("\nEOF\n")
                command = f"{command}\n{body}\nEOF"
            out.append((command, expected))
    return out


def plot_commands(text: str) -> List[Tuple[str, str]]:
    """``(command, picture name)`` of every shell example that draws a picture."""
    return [(c, m.group(1)) for c, _ in shell_examples(text) for m in [re.search(r"--plot (\S+)", c)] if m]


def main() -> int:
    where = GUIDE.parent / "guide"
    where.mkdir(exist_ok=True)
    for command, name in plot_commands(GUIDE.read_text()):
        subprocess.run(["bash", "-c", command], cwd=where, check=True)
        print(f"drew docs/guide/{name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
