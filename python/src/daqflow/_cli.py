"""The ``daqflow`` command of the package: the CLI built with it (daqflow/bin/daqflow)."""

from __future__ import annotations

import os
import sys


def executable() -> str:
    """The daqflow CLI that came with this package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "daqflow")


def main() -> None:
    program = executable()
    # Python filters in the workers it starts run in this interpreter unless told otherwise.
    os.environ.setdefault("DAQFLOW_PYTHON", sys.executable)
    os.execv(program, [program, *sys.argv[1:]])
