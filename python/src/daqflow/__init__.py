"""daqflow from Python.

- ``daqflow.open(path, verify=False)``: a run's data files (.dqf events, time-slice archives,
  FRD .raw files) as numpy arrays that view the mapped files.
- ``daqflow.Executive``, ``daqflow.Cluster``: the control API of running executives.
- ``daqflow.run(config, duration)``, ``daqflow.start(...)``: run a configuration.
- ``daqflow.Decision``, ``daqflow.fragments``: what a farm filter written in Python uses.
"""

from . import _native
from .client import Cluster, ControlError, Executive, Run, RunError, run, start
from .filters import Decision, fragments
from .reader import (
    CORRUPTED,
    INCOMPLETE,
    MICROSLICE_DTYPE,
    Component,
    DataFile,
    DataSet,
    Event,
    Events,
    VerificationError,
    open,
)

__version__: str = _native.version

__all__ = [
    "CORRUPTED",
    "INCOMPLETE",
    "MICROSLICE_DTYPE",
    "Cluster",
    "Component",
    "ControlError",
    "DataFile",
    "DataSet",
    "Decision",
    "Event",
    "Events",
    "Executive",
    "Run",
    "RunError",
    "VerificationError",
    "__version__",
    "fragments",
    "open",
    "run",
    "start",
]
