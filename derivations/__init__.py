"""Derivation documents: scripts that arrange the model's equations into ``docs/``.

Run ``python -m derivations`` from the repository root to render ``docs/*.md`` and
``docs/mlsysim_sym.tex``; ``python -m derivations --check`` fails when the committed
files differ from a fresh render.
"""
