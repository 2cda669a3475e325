"""Reads daqflow HDF5 event files with h5py and numpy alone, as an analyst would (docs/hdf5.md),
in an interpreter where daqflow's own Python package cannot be imported. Run with
/usr/bin/python3 (Debian's python3-h5py):

    /usr/bin/python3 read_h5.py FILE.h5... > events.json

Prints, as JSON, each file's attributes and each event's id, luminosity section, flags, size,
CRC-32 (zlib's, of its bytes: for comparing with other files) and whether its bytes lie back to
back in /data as the index says."""

import json
import sys
import zlib

try:
    import daqflow  # noqa: F401
    sys.exit("daqflow is importable here: this reader must do without it")
except ImportError:
    pass

import h5py
import numpy as np


def read(path):
    with h5py.File(path, "r") as f:
        attrs = {k: (v.item() if isinstance(v, np.generic) else
                     v.tolist() if isinstance(v, np.ndarray) else v) for k, v in f.attrs.items()}
        index = f["index"][:]
        data = f["data"]
        assert data.dtype == np.uint8 and data.ndim == 1, f"{path}: /data is {data.dtype}"
        events = []
        expected_offset = 0
        # One read for all the records' bytes, then views into it.
        everything = data[:]
        for row in index:
            offset, size = int(row["offset"]), int(row["size"])
            assert offset == expected_offset, f"{path}: event {row['event']} not back to back"
            expected_offset = offset + size
            body = everything[offset:offset + size].tobytes()
            events.append({"event": int(row["event"]), "lumi": int(row["lumi"]),
                           "flags": int(row["flags"]), "size": size,
                           "crc32": zlib.crc32(body)})
        assert expected_offset == len(everything), f"{path}: /data longer than its index"
        return {"path": path, "attrs": attrs, "events": events}


print(json.dumps([read(p) for p in sys.argv[1:]]))
