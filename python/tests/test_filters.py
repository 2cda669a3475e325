"""Farm workers deciding with Python functions (the filter host embedded in the workers)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import daqflow
from conftest import EXAMPLES, Ran, farm_config, run_in

sys.path.insert(0, str(EXAMPLES / "plugins"))
import farm_select  # noqa: E402  (the example filter, to compare its decisions)


def python_filter(module: str, function: str, path: Path, extra: str = "") -> str:
    return (f"{{kind: python, module: {module}, function: {function}, python: {sys.executable},"
            f" path: {path}{', ' + extra if extra else ''}}}")


def assert_every_event_decided_once(ran: Ran, count: int) -> dict[str, int]:
    assert ran.summary["status"] == "ok", ran.summary.get("failure")
    sfc: dict[str, int] = ran.results("sfc0")
    assert sfc["events_received"] == count
    assert sfc["events_decided"] == count
    assert sfc["events_outstanding"] == 0 and sfc["events_queued"] == 0
    assert sum(ran.results(w)["events_accepted"] + ran.results(w)["events_rejected"]
               for w in ("w0", "w1", "w2", "w3")) == count
    return sfc


def test_the_example_filter_decides_every_event_once(tmp_path: Path) -> None:
    count = 2000
    ran = run_in(tmp_path, farm_config(python_filter("farm_select", "select", EXAMPLES / "plugins"),
                                        count), "--duration", "0")
    sfc = assert_every_event_decided_once(ran, count)
    assert sfc["events_accepted"] > 0
    data = daqflow.open(tmp_path / "data", verify=True)
    numbers = [e.number for e in data]
    assert len(numbers) == len(set(numbers)), "no event stored twice"
    assert len(numbers) == sfc["events_accepted"] == sfc["events_written"]
    for e in data:
        head = e.output[:24].view("<u8")
        assert int(head[0]) == e.number
        assert int(head[2]) % farm_select.EVERY == 0
        assert e.trigger_bits & 1
        assert len(e.output) == 24 + min(int(head[1]), farm_select.KEEP)


def test_a_filter_that_raises_fails_its_worker_with_the_traceback(tmp_path: Path) -> None:
    module = tmp_path / "failing_filter.py"
    module.write_text("def decide(event, number, flags):\n"
                      "    if number >= 10:\n"
                      "        raise RuntimeError(f'cannot decide on event {number}')\n"
                      "    return False\n")
    with pytest.raises(daqflow.RunError) as failed:
        run_in(tmp_path, farm_config(python_filter("failing_filter", "decide", tmp_path), 500),
               "--duration", "0")
    output = failed.value.output
    assert "Traceback (most recent call last)" in output
    assert "RuntimeError: cannot decide on event" in output
    assert "failing_filter.py" in output


def test_on_error_reject_counts_the_events_a_filter_fails_on(tmp_path: Path) -> None:
    module = tmp_path / "odd_filter.py"
    module.write_text("import daqflow\n"
                      "def decide(event, number, flags):\n"
                      "    if number % 2:\n"
                      "        raise ValueError('odd')\n"
                      "    return daqflow.Decision(number % 4 == 0, 2, bytes(event[:16]))\n")
    count = 1000
    ran = run_in(tmp_path, farm_config(python_filter("odd_filter", "decide", tmp_path,
                                                      "on_error: reject"), count),
                 "--duration", "0")
    sfc = assert_every_event_decided_once(ran, count)
    failed = sum(ran.results(w)["events_failed"] for w in ("w0", "w1", "w2", "w3"))
    assert failed == count // 2
    assert sfc["events_accepted"] == count // 4
    outputs = [bytes(e.output) for e in daqflow.open(tmp_path / "data")]
    assert all(len(o) == 16 for o in outputs)


def test_a_missing_module_is_a_clear_error_at_configure(tmp_path: Path) -> None:
    with pytest.raises(daqflow.RunError) as failed:
        run_in(tmp_path, farm_config(python_filter("no_such_module", "f", tmp_path), 10),
               "--duration", "0")
    assert "No module named 'no_such_module'" in failed.value.output


def test_fragments_splits_a_built_event() -> None:
    # Two FED fragments, 16 bytes each: header (BOE 0x5, source 7 and 9), trailer (EOE 0xa,
    # length 2 words); CRCs are not checked here.
    def fragment(source: int) -> bytes:
        header = (0x5 << 60) | (source << 8)
        trailer = (0xA << 60) | (2 << 32)
        return header.to_bytes(8, "little") + trailer.to_bytes(8, "little")

    event = np.frombuffer(fragment(7) + fragment(9), dtype=np.uint8)
    parts = daqflow.fragments(event)
    assert list(parts) == [7, 9]
    assert all(np.shares_memory(p, event) for p in parts.values())
    with pytest.raises(ValueError, match="FED fragments"):
        daqflow.fragments(event[:24])
