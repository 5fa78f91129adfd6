"""Cost terms, one module per family: collectives, pipeline, memory, roofline, communication, MoE, and the
extended model's; ``base`` holds exact integer division, the Iverson bracket and the named-term machinery.

Importing this package defines every family, so :data:`~mlsysim_sym.terms.base.TERM_CLASSES` holds every
cost term.
"""
from . import base, collectives, communication, extended, fleet, memory, moe, pipeline, roofline  # noqa: F401
