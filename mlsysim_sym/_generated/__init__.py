"""Pre-generated scalar code of solve(); see tools/generate_code.py."""
