"""The add-on's operators, one module per stage: thin, each calls plain functions of core and the add-on's helpers."""
from . import library, live, mapping, solve, stitch, stream

MODULES = (library, stitch, stream, solve, mapping, live)
"""In the order they register (the add-on's __init__ registers them)."""
