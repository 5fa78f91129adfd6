"""Cost terms, one module per family: collectives, pipeline, memory, roofline, communication, MoE, the
extended model's, and the book's relations the step-time model does not price: the training dynamics
(``training``), the networks and collectives beyond the ring (``networks``), the foundation appendices' fleet
relations (``fleet``), and reliability and checkpointing (``reliability``); ``base`` holds exact integer division, the Iverson bracket and the
named-term machinery.

Importing this package defines every family, so :data:`~mlsysim_sym.terms.base.TERM_CLASSES` holds every
cost term.
"""
from . import base, collectives, communication, extended, fleet, memory, moe, networks, pipeline, reliability, roofline, training  # noqa: F401,E501
