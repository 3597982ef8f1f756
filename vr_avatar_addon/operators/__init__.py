"""The add-on's operators, one module per stage: thin, each calls plain functions of core and the add-on's helpers."""
from . import library, live, mapping, solve, stitch, stream

_modules = (library, stitch, stream, solve, mapping, live)


def register():
    for module in _modules:
        module.register()


def unregister():
    for module in reversed(_modules):
        module.unregister()
