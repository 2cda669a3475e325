"""Filter-farm workers in Python: the function a worker calls per event, and what it returns.

A worker configured with ``processing: {kind: python, module: M, function: F}`` calls
``M.F(event, number, flags)`` for every event its SFC sends it: ``event`` is the built event's
bytes as a read-only numpy array (valid during the call only: copy what you keep), ``number``
its event number, ``flags`` INCOMPLETE / CORRUPTED. It returns a bool (accept; trigger bit 1),
an int (trigger bits; accepted when not 0) or a Decision (with output bytes to store). An
exception fails the worker with its traceback, or, with ``on_error: reject``, rejects the event
and counts it in the worker's ``events_failed``.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np
import numpy.typing as npt

from . import _native


@dataclass(frozen=True)
class Decision:
    """A worker's decision on one event."""

    accept: bool
    trigger_bits: int = 1
    #: What the SFC stores with an accepted event (at most the worker's output_bytes).
    output: Optional[Union[bytes, bytearray, memoryview, npt.NDArray[np.uint8]]] = None


def fragments(event: npt.NDArray[np.uint8]) -> dict[int, npt.NDArray[np.uint8]]:
    """A built event's FED fragments by source id, as views of ``event`` (walked from the end,
    as daqflow's builder does). Raises ValueError when the bytes are not FED fragments."""
    sources, offsets, sizes = _native.split_fragments(event)
    return {int(s): event[int(o) : int(o) + int(n)] for s, o, n in zip(sources, offsets, sizes)}


def host_library() -> str:
    """The filter host a worker loads for this interpreter (a farm plugin)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "libdaqflow_python_filter.so")


def _print_host_info() -> None:
    """What a worker asks of the interpreter its configuration names (one JSON line)."""
    info = {
        "library": host_library(),
        "executable": sys.executable,
        "path": [p for p in sys.path if p],
        "version": sys.version.split()[0],
    }
    print(json.dumps(info))
