"""`python -m core`: the command line (see cli.py)."""
import os
import sys

INTERRUPTED = "error: interrupted; each output is either complete or as it was"
"""What Ctrl+C prints (cli.main says the same once its imports are done)."""
INTERRUPTED_STATUS = 130


def _exit(code: int) -> None:
    """Exit with `code`; status 130 by os._exit (outputs are settled by then): CPython otherwise dies by SIGINT
    (status -2) when the caught Ctrl+C passed through an extension's PyRun_String, as while numpy.random imports."""
    if code != INTERRUPTED_STATUS:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader gone, or the stream closed: nothing more to say
            pass
    os._exit(code)


try:  # importing takes a second: Ctrl+C then is one line and status 130 too
    from .tools.cli import main
    status = main()
except KeyboardInterrupt:
    print(INTERRUPTED, file=sys.stderr)
    status = INTERRUPTED_STATUS
_exit(status)
