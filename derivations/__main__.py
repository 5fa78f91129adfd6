"""``python -m derivations [--check]``: render (or check) ``docs/``."""
import sys

from derivations.render import main

sys.exit(main(sys.argv[1:]))
