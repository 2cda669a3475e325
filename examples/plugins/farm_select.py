"""An example filter-farm filter in Python (docs/python.md, "Filters in Python"): the selection
of farm_select.c, written with numpy. It hashes every byte of the event (h = h * 31 + byte,
modulo 2^64), accepts one event in EVERY by that hash, sets trigger bit 0 for those and bit 1
when bit 16 of the hash is set, and stores the event number, its size, the hash and the event's
first KEEP bytes.

    worker: {processing: {kind: python, module: farm_select, function: select,
                          path: examples/plugins}}
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

import daqflow

EVERY = 200
KEEP = 1024

# 31^k modulo 2^64, k = 0, 1, ...: the hash is sum(byte_i * 31^(n-1-i)), wrapping as uint64.
_powers = np.ones(1, dtype=np.uint64)


def _powers_of_31(n: int) -> npt.NDArray[np.uint64]:
    global _powers
    if len(_powers) < n:
        with np.errstate(over="ignore"):
            p = np.full(max(n, 2 * len(_powers)), 31, dtype=np.uint64)
            p[0] = 1
            _powers = np.cumprod(p, dtype=np.uint64)
    return _powers[:n][::-1]


def select(event: npt.NDArray[np.uint8], number: int, flags: int) -> bool | daqflow.Decision:
    with np.errstate(over="ignore"):
        h = int(np.dot(event.astype(np.uint64), _powers_of_31(len(event))))
    if h % EVERY != 0:
        return False
    head = np.array([number, len(event), h], dtype="<u8").tobytes()
    return daqflow.Decision(accept=True, trigger_bits=1 | ((h >> 16) & 1) << 1,
                            output=head + event[:KEEP].tobytes())
