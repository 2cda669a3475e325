"""daqflow.open on the files of real runs: counts as the runs' summaries give them, bytes as the
FED format has them, views of the mapped files, every CRC checked with verify=True."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import daqflow
from conftest import Ran


def fed_source(fragment: np.ndarray) -> int:
    """The source id in a FED fragment's header (bits 19..8 of its first word)."""
    word = int(fragment[:8].view("<u8")[0])
    return (word >> 8) & 0xFFF


def test_built_events_read_back_as_the_run_wrote_them(events_run: Ran) -> None:
    data = daqflow.open(events_run.dir / "data", verify=True)
    written = events_run.results("bu1")["events_written"]
    assert written > 0
    assert len(data) == written
    numbers = [e.number for e in data]
    assert len(set(numbers)) == len(numbers), "no event twice"
    for f in data.files:
        assert f.format == "dqf" and f.content == "events" and f.complete
        assert f.run == events_run.summary["run_number"]
        assert f.lumi >= 1  # one luminosity section a file
    event = data[len(data) // 2]
    fragments = event.fragments
    # The EVM's readout and two RUs, two FEDs each: 0-1, 100-101 and 200-201.
    assert sorted(fragments) == [0, 1, 100, 101, 200, 201]
    for source, fragment in fragments.items():
        assert fed_source(fragment) == source
        assert len(fragment) % 8 == 0
    assert sum(len(f) for f in fragments.values()) == event.size


def test_fragments_are_read_only_views_of_the_mapping(events_run: Ran) -> None:
    data = daqflow.open(events_run.dir / "data")
    event = data[0]
    buffer = event.file.buffer
    assert not buffer.flags.writeable
    for fragment in event.fragments.values():
        assert np.shares_memory(fragment, buffer)
        assert not fragment.flags.writeable
        with pytest.raises(ValueError):
            fragment[0] = 1
    assert np.shares_memory(event.data, buffer)


def test_a_flipped_byte_is_named_by_file_event_and_source(events_run: Ran, tmp_path: Path) -> None:
    copy = tmp_path / "data"
    shutil.copytree(events_run.dir / "data", copy)
    first = daqflow.open(copy).files[0]
    event = first[3]
    sources = list(event.fragments)
    # A payload byte of the event's second FED fragment.
    start, _ = first._piece_range(3)
    at = int(first.pieces["offset"][start + 1]) + 12
    path = first.path
    del first, event
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0x10]))

    assert len(daqflow.open(copy)) > 0  # without verification, the bytes are read as they are
    with pytest.raises(daqflow.VerificationError) as raised:
        for _ in daqflow.open(copy, verify=True):
            pass
    error = raised.value
    assert error.path == path
    assert error.source == sources[1]
    assert error.event == daqflow.open(copy).files[0][3].number
    assert "CRC" in error.message


def test_a_range_of_events_reads_into_arrays(events_run: Ran) -> None:
    data = daqflow.open(events_run.dir / "data")
    batch = data.read(10, 60)
    assert len(batch) == 50
    assert list(batch.number) == [data[i].number for i in range(10, 60)]
    assert int(batch.offsets[-1]) == len(batch.data) == int(batch.size.sum())
    e = data[25]
    i = 15  # its row in the batch
    assert bytes(batch.data[int(batch.offsets[i]) : int(batch.offsets[i + 1])]) == bytes(e.data)
    rows = np.flatnonzero(batch.fragment_event == i)
    assert list(batch.fragment_source[rows]) == list(e.fragments)
    for row, fragment in zip(rows, e.fragments.values()):
        o, n = int(batch.fragment_offset[row]), int(batch.fragment_size[row])
        assert bytes(batch.data[o : o + n]) == bytes(fragment)
    index = data.arrays()
    assert len(index["number"]) == len(data)


def test_to_awkward_gives_ragged_fragments(events_run: Ran) -> None:
    ak = pytest.importorskip("awkward")
    data = daqflow.open(events_run.dir / "data")
    events = data.to_awkward(0, 20)
    assert len(events) == 20
    assert ak.to_list(events.fragments.source[0]) == list(data[0].fragments)
    assert bytes(np.asarray(events.fragments.data[3][2])) == bytes(list(data[3].fragments.values())[2])


def test_frd_files_read_back_with_the_runs_numbers(frd_run: Ran) -> None:
    data = daqflow.open(frd_run.dir / "data", verify=True)
    written = frd_run.results("bu1")["events_written"]
    assert written > 0 and len(data) == written
    assert {f.format for f in data.files} == {"frd"}
    lumis = {e.lumi for e in data}
    assert min(lumis) >= 1
    assert len(lumis) >= 2, "the run spans several luminosity sections (2000 events each)"
    for f in data.files:
        assert all(e.lumi == f.lumi for e in f)
    assert all(len(e.fragments) == 6 for e in data)


def test_a_timeslice_archive_reads_back_with_its_components(timeslice_run: Ran) -> None:
    data = daqflow.open(timeslice_run.dir / "data", verify=True)
    written = sum(timeslice_run.results(b)["timeslices_written"] for b in ("tb0", "tb1"))
    assert written == 40 and len(data) == 40
    assert sorted(e.number for e in data) == list(range(40))
    ts = data[5]
    assert ts.file.content == "timeslices"
    components = ts.components
    assert [c.eq_id for c in components] == [0, 1]
    for c in components:
        d = c.descriptors
        assert d.dtype == daqflow.MICROSLICE_DTYPE
        assert (d["hdr_id"] == 0xDD).all()
        assert len(d) == 11  # 10 core microslices and 1 of overlap
        assert int(d["size"].sum()) == len(c.content)
        assert np.shares_memory(c.content, ts.file.buffer)
        assert [len(m) for m in c.microslices()] == list(d["size"])
    assert set(ts.fragments) == {0, 1}


def test_errors_name_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        daqflow.open(tmp_path / "nothing")
    with pytest.raises(FileNotFoundError, match="no .dqf or .raw files"):
        daqflow.open(tmp_path)
    bad = tmp_path / "bad.dqf"
    bad.write_bytes(b"this is not an event file, only text long enough")
    with pytest.raises(ValueError, match="bad.dqf"):
        daqflow.open(bad)
