"""Reading daqflow's data files: .dqf event files, time-slice archives and CMS FRD files.

Every file is mapped once, read-only, by daqflow's C++ reader; events, fragments and microslices
are numpy arrays that view the mapping (``np.shares_memory(event.data, file.buffer)``), never
copies, and they keep the mapping alive as long as they live.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import numpy.typing as npt

from . import _native

if TYPE_CHECKING:
    import awkward

Bytes = npt.NDArray[np.uint8]
PathLike = Union[str, "os.PathLike[str]"]

#: Event flags (``Event.flags``): a readout's data missing, a fragment that failed its checks.
INCOMPLETE = 1
CORRUPTED = 2

#: A microslice descriptor as the time-slice archive stores it (32 bytes, little-endian).
MICROSLICE_DTYPE = np.dtype(
    [
        ("hdr_id", "u1"),
        ("hdr_ver", "u1"),
        ("eq_id", "<u2"),
        ("flags", "<u2"),
        ("sys_id", "u1"),
        ("sys_ver", "u1"),
        ("idx", "<u8"),
        ("crc", "<u4"),
        ("size", "<u4"),
        ("offset", "<u8"),
    ]
)

_SUFFIXES = (".dqf", ".raw")


class VerificationError(Exception):
    """A check failed: the file, the event (None: the file as a whole) and the source (the FED
    or the equipment, None when not known), and what is wrong."""

    def __init__(self, path: str, event: int | None, source: int | None, message: str) -> None:
        where = path if event is None else f"{path}: event {event}"
        if source is not None:
            where += f", source {source}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.event = event
        self.source = source
        self.message = message


@dataclass(frozen=True)
class Component:
    """One input's part of a timeslice: its microslice descriptors and their contents."""

    eq_id: int
    descriptors: npt.NDArray[np.void]  # MICROSLICE_DTYPE
    content: Bytes

    def microslices(self) -> list[Bytes]:
        """Each microslice's content, in order (views of ``content``)."""
        ends = np.cumsum(self.descriptors["size"], dtype=np.uint64)
        starts = ends - self.descriptors["size"]
        return [self.content[int(a) : int(b)] for a, b in zip(starts, ends)]


class Event:
    """One record of a file: an event a BU built, an SFC's accepted event, or a timeslice."""

    __slots__ = ("file", "index")

    def __init__(self, file: DataFile, index: int) -> None:
        self.file = file
        self.index = index

    def _column(self, name: str) -> int:
        return int(self.file.records[name][self.index])

    @property
    def number(self) -> int:
        """The event's number (the EVM's, with its resync count in the high 32 bits), or the
        timeslice's index."""
        return self._column("number")

    @property
    def lumi(self) -> int:
        """Its luminosity section (0 where the file does not record it)."""
        return self._column("lumi")

    @property
    def flags(self) -> int:
        """INCOMPLETE, CORRUPTED (FRD events: 0)."""
        return self._column("flags")

    @property
    def size(self) -> int:
        return self._column("size")

    @property
    def crc32c(self) -> int:
        return self._column("crc32c")

    @property
    def data(self) -> Bytes:
        """All its bytes, as written (read-only, a view of the file)."""
        offset = self._column("offset")
        return self.file.buffer[offset : offset + self.size]

    @property
    def fragments(self) -> dict[int, Bytes]:
        """Per source: a built event's FED fragments by source id (header to trailer), a
        timeslice's contents by equipment id. Empty for an SFC's decisions."""
        start, stop = self.file._piece_range(self.index)
        sources, offsets, sizes = self.file._piece_lists()
        buffer = self.file.buffer
        return {
            sources[i]: buffer[offsets[i] : offsets[i] + sizes[i]] for i in range(start, stop)
        }

    @property
    def components(self) -> list[Component]:
        """A timeslice's components (empty for other records)."""
        start, stop = self.file._piece_range(self.index)
        table = self.file.pieces
        buffer = self.file.buffer
        out = []
        for i in range(start, stop):
            first = int(table["descriptors"][i])
            count = int(table["microslices"][i])
            offset = int(table["offset"][i])
            out.append(
                Component(
                    eq_id=int(table["source"][i]),
                    descriptors=buffer[first : first + 32 * count].view(MICROSLICE_DTYPE),
                    content=buffer[offset : offset + int(table["size"][i])],
                )
            )
        return out

    @property
    def trigger_bits(self) -> int:
        """An SFC's accepted event: the bits its worker set."""
        self._require("decisions", "trigger_bits")
        return int(self.data[8:16].view("<u8")[0])

    @property
    def output(self) -> Bytes:
        """An SFC's accepted event: what its worker produced."""
        self._require("decisions", "output")
        return self.data[32:]

    def _require(self, content: str, what: str) -> None:
        if self.file.content != content:
            raise AttributeError(f"{what}: a record of {self.file.content}, not {content}")

    def __repr__(self) -> str:
        return f"Event(number={self.number}, lumi={self.lumi}, flags={self.flags}, size={self.size})"


class DataFile(Sequence[Event]):
    """One data file, mapped and indexed."""

    def __init__(self, path: PathLike) -> None:
        self._native = _native.DataFile(os.fspath(path))
        self.path: str = self._native.path
        #: "dqf" or "frd".
        self.format: str = self._native.format
        #: "events", "decisions" or "timeslices".
        self.content: str = self._native.content
        self.run: int = self._native.run
        self.writer: str = self._native.writer
        self.sequence: int = self._native.sequence
        self.lumi: int = self._native.lumi
        #: False for a file still being written (no sidecar): read to its last whole record.
        self.complete: bool = self._native.complete
        #: The whole file, read-only: every array handed out is a view of it.
        self.buffer: Bytes = self._native.buffer
        #: One column per field, one row per record: number, lumi, flags, offset, size, crc32c,
        #: pieces.
        self.records: dict[str, npt.NDArray[Any]] = self._native.records()
        self._pieces: dict[str, npt.NDArray[Any]] | None = None
        self._piece_starts: npt.NDArray[np.int64] | None = None
        self._starts_list: list[int] = []
        self._lists: tuple[list[int], list[int], list[int]] | None = None
        self.verified = False

    @property
    def pieces(self) -> dict[str, npt.NDArray[Any]]:
        """Every record's pieces (FED fragments, components), one row each: record, source,
        offset, size, descriptors, microslices."""
        if self._pieces is None:
            self._pieces = self._native.pieces()
            self._piece_starts = np.searchsorted(
                self._pieces["record"], np.arange(len(self) + 1, dtype=np.uint64)
            ).astype(np.int64)
            self._starts_list = self._piece_starts.tolist()
        return self._pieces

    def _piece_lists(self) -> tuple[list[int], list[int], list[int]]:
        """The pieces' sources, offsets and sizes as Python lists (fast to index one by one)."""
        if self._lists is None:
            p = self.pieces
            self._lists = (p["source"].tolist(), p["offset"].tolist(), p["size"].tolist())
        return self._lists

    def _piece_range(self, start: int, stop: int | None = None) -> tuple[int, int]:
        """The rows of ``pieces`` of records [start, stop) (stop: start + 1)."""
        if self._pieces is None:
            self.pieces
        stop = start + 1 if stop is None else stop
        return self._starts_list[start], self._starts_list[stop]

    def verify(self) -> None:
        """Every check ``daqflow dump`` makes: each record's CRC-32C, the FED fragments'
        CRC-16s and L1 ids (timeslices: every microslice's CRC-32C), the sidecar's counts and
        checksum. Raises VerificationError naming the file, the event and the source."""
        if self.verified:
            return
        result = self._native.verify()
        for number, source, problem in result.bad_records:
            flags = self.records["flags"][self.records["number"] == number]
            if len(flags) and int(flags[0]) & CORRUPTED:
                continue  # stored as received, flagged: not the file's fault
            raise VerificationError(self.path, number, source if source >= 0 else None, problem)
        if result.problems:
            raise VerificationError(self.path, None, None, "; ".join(result.problems))
        self.verified = True

    def __len__(self) -> int:
        return len(self.records["number"])

    def __getitem__(self, index: int) -> Event:  # type: ignore[override]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"{self.path} holds {len(self)} records, not {index + 1}")
        return Event(self, index)

    def __iter__(self) -> Iterator[Event]:
        for i in range(len(self)):
            yield Event(self, i)

    def __repr__(self) -> str:
        return (
            f"DataFile({self.path!r}, {self.format}, {self.content}, run {self.run}, "
            f"{len(self)} records{'' if self.complete else ', incomplete'})"
        )


@dataclass(frozen=True)
class Events:
    """A range of events read at once: one row per event, the bytes back to back in ``data``
    (a copy), and one row per fragment (or component) with its place in ``data``."""

    number: npt.NDArray[np.uint64]
    lumi: npt.NDArray[np.uint32]
    flags: npt.NDArray[np.uint32]
    size: npt.NDArray[np.uint64]
    data: Bytes
    offsets: npt.NDArray[np.uint64]  # event i is data[offsets[i]:offsets[i + 1]]
    fragment_event: npt.NDArray[np.int64]  # the event (row) a fragment belongs to
    fragment_source: npt.NDArray[np.uint32]
    fragment_offset: npt.NDArray[np.uint64]  # in data
    fragment_size: npt.NDArray[np.uint64]

    def __len__(self) -> int:
        return len(self.number)


class DataSet(Sequence[Event]):
    """The data files of a run (or one file): their events in file order."""

    def __init__(self, files: list[DataFile], verify: bool) -> None:
        self.files = files
        self.verify = verify
        counts = np.array([len(f) for f in files], dtype=np.int64)
        self._starts = np.concatenate(([0], np.cumsum(counts)))

    def _file(self, i: int) -> DataFile:
        f = self.files[i]
        if self.verify:
            f.verify()
        return f

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, index: int) -> Event:  # type: ignore[override]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"{len(self)} events, not {index + 1}")
        i = int(np.searchsorted(self._starts, index, side="right")) - 1
        return Event(self._file(i), index - int(self._starts[i]))

    def __iter__(self) -> Iterator[Event]:
        for i in range(len(self.files)):
            f = self._file(i)
            for j in range(len(f)):
                yield Event(f, j)

    def arrays(self) -> dict[str, npt.NDArray[Any]]:
        """The index of every event as columns: file (its place in ``files``), number, lumi,
        flags, size, crc32c."""
        out: dict[str, npt.NDArray[Any]] = {
            "file": np.repeat(np.arange(len(self.files)), np.diff(self._starts))
        }
        for name in ("number", "lumi", "flags", "size", "crc32c"):
            columns = [f.records[name] for f in self.files]
            out[name] = np.concatenate(columns) if columns else np.zeros(0, np.uint64)
        return out

    def read(self, start: int = 0, stop: int | None = None) -> Events:
        """Events [start, stop) into arrays at once (verified first when the set verifies)."""
        stop = len(self) if stop is None else min(stop, len(self))
        start = max(0, min(start, stop))
        parts: list[tuple[DataFile, int, int]] = []
        for i, f in enumerate(self.files):
            a = max(start, int(self._starts[i])) - int(self._starts[i])
            b = min(stop, int(self._starts[i + 1])) - int(self._starts[i])
            if a < b:
                parts.append((self._file(i), a, b))
        return _read_parts(parts)

    def to_awkward(self, start: int = 0, stop: int | None = None) -> awkward.Array:
        """Events [start, stop) as an awkward array of records: number, lumi, flags, and
        fragments, a list of {source, data} per event (needs the awkward package)."""
        import awkward as ak

        e = self.read(start, stop)
        data = ak.unflatten(
            e.data[_fragment_bytes_order(e)], e.fragment_size.astype(np.int64)
        )
        fragments = ak.zip({"source": e.fragment_source, "data": data}, depth_limit=1)
        per_event = np.bincount(e.fragment_event, minlength=len(e)).astype(np.int64)
        return ak.zip(
            {
                "number": e.number,
                "lumi": e.lumi,
                "flags": e.flags,
                "fragments": ak.unflatten(fragments, per_event),
            },
            depth_limit=1,
        )

    def __repr__(self) -> str:
        return f"DataSet({len(self.files)} files, {len(self)} events)"


def _fragment_bytes_order(e: Events) -> npt.NDArray[np.int64]:
    """Indexes of data's bytes, fragment after fragment (fragments need not cover it all)."""
    if len(e.fragment_size) == 0:
        return np.zeros(0, np.int64)
    sizes = e.fragment_size.astype(np.int64)
    starts = e.fragment_offset.astype(np.int64)
    within = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return np.repeat(starts, sizes) + within


def _read_parts(parts: list[tuple[DataFile, int, int]]) -> Events:
    numbers, lumis, flags, sizes, chunks = [], [], [], [], []
    f_event, f_source, f_offset, f_size = [], [], [], []
    events = 0
    at = 0
    for f, a, b in parts:
        r = f.records
        numbers.append(r["number"][a:b])
        lumis.append(r["lumi"][a:b])
        flags.append(r["flags"][a:b])
        sizes.append(r["size"][a:b])
        for off, size in zip(r["offset"][a:b], r["size"][a:b]):
            chunks.append(f.buffer[int(off) : int(off) + int(size)])
        p = f.pieces
        lo, hi = f._piece_range(a, b)
        record = p["record"][lo:hi].astype(np.int64)
        # A piece's offset in data: where its record's bytes land, plus its place in them.
        record_at = np.concatenate(([0], np.cumsum(r["size"][a:b]))).astype(np.uint64) + np.uint64(at)
        f_event.append(record - a + events)
        f_source.append(p["source"][lo:hi])
        f_offset.append(record_at[record - a] + (p["offset"][lo:hi] - r["offset"][record]))
        f_size.append(p["size"][lo:hi])
        events += b - a
        at += int(r["size"][a:b].sum())

    def cat(arrays: list[npt.NDArray[Any]], dtype: Any) -> npt.NDArray[Any]:
        return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)

    size = cat(sizes, np.uint64)
    return Events(
        number=cat(numbers, np.uint64),
        lumi=cat(lumis, np.uint32),
        flags=cat(flags, np.uint32),
        size=size,
        data=cat(chunks, np.uint8),
        offsets=np.concatenate(([0], np.cumsum(size))).astype(np.uint64),
        fragment_event=cat(f_event, np.int64),
        fragment_source=cat(f_source, np.uint32),
        fragment_offset=cat(f_offset, np.uint64),
        fragment_size=cat(f_size, np.uint64),
    )


def _data_files(path: str) -> list[str]:
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{path}: no such file or directory")
    found = []
    for root, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d != "open")  # FRD files being written
        found += [os.path.join(root, n) for n in names if n.endswith(_SUFFIXES)]
    if not found:
        raise FileNotFoundError(
            f"{path}: no .dqf or .raw files (files still named .part are being written; "
            "HDF5 files are read with h5py, see docs/hdf5.md)"
        )
    return sorted(found)


def open(path: PathLike, *, verify: bool = False) -> DataSet:
    """A data file, or every complete data file under a folder (.dqf event and time-slice
    files, FRD .raw files), sorted by path. With verify=True every file is checked as
    ``daqflow dump`` checks it before its events are read: a bad CRC raises VerificationError
    naming the file, the event and the source."""
    files = [DataFile(p) for p in _data_files(os.fspath(path))]
    return DataSet(files, verify)
