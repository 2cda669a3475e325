"""The control client against real executives: one started by hand (daqflow exec) and driven
through its states, and whole runs through daqflow.run / daqflow.start."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import daqflow
from daqflow._cli import executable
from conftest import builder_config


@pytest.fixture
def executive(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    config = tmp_path / "builder.yaml"
    config.write_text(builder_config("{kind: discard}"))
    log = open(tmp_path / "exec.log", "wb")
    process = subprocess.Popen([executable(), "exec", str(config), "--context", "builder"],
                               stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    yield config, process
    if process.poll() is None:
        process.kill()
    process.wait()
    log.close()


def reachable(cluster: daqflow.Cluster, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            cluster.state
            return
        except daqflow.ControlError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_a_cluster_is_driven_through_its_states(
        executive: tuple[Path, subprocess.Popen[bytes]]) -> None:
    config, process = executive
    cluster = daqflow.Cluster.from_config(config)
    assert [a.id for a in cluster.apps] == ["evm0", "ru1", "ru2", "bu1"]
    reachable(cluster, 60)
    assert cluster.state == "Halted"
    cluster.configure()
    assert cluster.state == "Ready"
    cluster.enable()
    bu = cluster.executive_of("bu1")
    deadline = time.monotonic() + 60
    while bu.app("bu1")["metrics"]["events_built"] < 1000:
        assert time.monotonic() < deadline, "1000 events built"
        time.sleep(0.1)

    frame = cluster.metrics_frame()
    built = frame[(frame.app == "bu1") & (frame.name == "events_built")]
    assert len(built) == 1 and built.value.iloc[0] > 0
    with pytest.raises(daqflow.ControlError) as refused:
        bu.command("Configure")
    assert refused.value.status == 409
    with pytest.raises(daqflow.ControlError) as unknown:
        bu.app("nosuchapp")
    assert unknown.value.status == 404 and "nosuchapp" in unknown.value.message
    with pytest.raises(TimeoutError):
        bu.wait_for("Suspended", timeout=0.2)

    # The history samples the metrics at its own interval: a series is unknown (404) until its
    # first sample is taken, and its samples come as they are taken.
    deadline = time.monotonic() + 60
    while True:
        try:
            history = cluster.history_frame("bu1", "events_built")
            if len(history) > 0 and history["events_built"].iloc[-1] > 0:
                break
        except daqflow.ControlError as e:
            assert e.status == 404 and "events_built" in e.message
        assert time.monotonic() < deadline, "a sample of events_built in the history"
        time.sleep(0.2)
    cluster.halt()
    assert cluster.state == "Halted"
    assert any("Enabled" in line["text"] for line in cluster.logs("bu1"))
    assert bu.set_params("bu1", events_per_request=8)["events_per_request"] == 8
    cluster.shutdown()
    assert process.wait(30) == 0


def test_run_returns_the_summary(tmp_path: Path) -> None:
    config = tmp_path / "builder.yaml"
    config.write_text(builder_config("{kind: discard}"))
    summary = daqflow.run(config, 1)
    assert summary["status"] == "ok"
    assert summary["applications"]["bu1"]["results"]["events_built"] > 0


def test_a_failed_run_raises_with_what_it_said(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(builder_config("{kind: nosuchoutput}"))
    with pytest.raises(daqflow.RunError) as failed:
        daqflow.run(config, 1)
    assert failed.value.returncode != 0
    assert "nosuchoutput" in failed.value.output
