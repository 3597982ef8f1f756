"""The kinds of failure core reports to its users, one type each.

Every message is one line that says what is wrong and where (the file, and its line where there is
one). The types subclass ValueError, FileNotFoundError or RuntimeError, so an `except` written for
those catches them too; the command line and the add-on print them without a traceback. Modules name
their own subclasses (`BVHError`, `StreamFormatError`, ...) for the file they read.
"""


class FileFormatError(ValueError):
    """A file that is not what it should be: damaged, the wrong kind, shapes or values that do not fit."""


class ModelFileError(FileFormatError):
    """A network's weight file (core.assets' format) that cannot be used."""


class DataNotFound(FileNotFoundError):
    """Input that is not there: a motion-capture folder or file, an empty selection of files."""


class MappingError(ValueError):
    """A skeleton that cannot be mapped onto the canonical humanoid, or a mapping preset that does not fit."""


class InputError(ValueError):
    """Input that is readable but cannot be used as asked (clips that cannot be stitched, nothing selected)."""


class OutputError(ValueError):
    """An output that would overwrite an input, or that cannot be written where it was asked for."""


class DeviceUnavailable(RuntimeError):
    """A device or runtime that is not there (OpenXR, Vulkan): what is missing and how to get it."""
