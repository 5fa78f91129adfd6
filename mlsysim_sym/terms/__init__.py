"""Cost terms, one module per family: collectives, pipeline, memory, compute, step."""
