"""Runs of real configurations, made once per session, whose files the tests read."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import daqflow


# The runs' ports come from below the kernel's ephemeral range (where every connection takes
# its local port, the runs' own among them) and apart from the integration tests' blocks (from
# 26000). A context's data_port is the first of its applications' (one each), so each port is
# handed out with the ones after it, all checked free.
PORT_FIRST = 20000
PORT_LAST = 25999
PORT_RUN = 4
_next_port = PORT_FIRST + (os.getpid() * PORT_RUN * 7) % (PORT_LAST - PORT_FIRST)


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """`count` ports free on the loopback now, each with the PORT_RUN - 1 ports after it."""
    global _next_port
    ports: list[int] = []
    for _ in range((PORT_LAST - PORT_FIRST) // PORT_RUN):
        if len(ports) == count:
            break
        first = _next_port
        _next_port += PORT_RUN
        if _next_port + PORT_RUN > PORT_LAST:
            _next_port = PORT_FIRST
        if all(_bindable(p) for p in range(first, first + PORT_RUN)):
            ports.append(first)
    if len(ports) < count:
        raise RuntimeError(f"no {count} free runs of {PORT_RUN} ports in {PORT_FIRST}-{PORT_LAST}")
    return ports


@dataclass
class Ran:
    """A finished run: its folder (configuration, data) and its summary."""

    dir: Path
    config: Path
    summary: dict[str, Any]

    def results(self, app: str) -> dict[str, Any]:
        result: dict[str, Any] = self.summary["applications"][app]["results"]
        return result


def builder_config(output: str, trigger_hz: int = 4000) -> str:
    """An EVM, two RUs and a BU in one process (inproc), each readout 2 FEDs of about 1 kB."""
    (port,) = free_ports(1)
    fragments = "fragment_size: {dist: lognormal, mean: 1024, sd: 256}"
    return f"""run: {{output: ./data}}
transports: {{default: inproc, pipeline_depth: 8}}
contexts:
  - name: builder
    host: 127.0.0.1
    control_port: {port}
    applications:
      - {{type: evm, id: evm0, rus: [ru1, ru2], bus: [bu1], feds: 2, {fragments},
         trigger_rate_hz: {trigger_hz}, lumi_section_events: 2000}}
      - {{type: ru, id: ru1, evm: evm0, feds: 2, {fragments}}}
      - {{type: ru, id: ru2, evm: evm0, feds: 2, {fragments}}}
      - {{type: bu, id: bu1, evm: evm0, events_per_request: 16, output: {output}}}
"""


def timeslice_config() -> str:
    """Two inputs and two builders in one process, round robin, about 40 timeslices."""
    (port,) = free_ports(1)
    inputs = ("builders: [tb0, tb1], microslice_us: 100, timeslice_us: 1000, overlap_us: 100, "
              "microslice_size: {dist: uniform, mean: 1024, sd: 256, max: 4096}, count: 40")
    return f"""run: {{output: ./data}}
transports: {{default: inproc, pipeline_depth: 8}}
contexts:
  - name: ts
    host: 127.0.0.1
    control_port: {port}
    applications:
      - {{type: ts_input, id: in0, {inputs}}}
      - {{type: ts_input, id: in1, {inputs}}}
      - {{type: ts_builder, id: tb0, inputs: [in0, in1], output: {{kind: file}}}}
      - {{type: ts_builder, id: tb1, inputs: [in0, in1], output: {{kind: file}}}}
"""


def run_in(dir: Path, text: str, *args: str) -> Ran:
    dir.mkdir(parents=True, exist_ok=True)
    config = dir / "config.yaml"
    config.write_text(text)
    cwd = os.getcwd()
    os.chdir(dir)  # ./data is the run's output
    try:
        summary = daqflow.run(config, None, *args, timeout=300)
    finally:
        os.chdir(cwd)
    return Ran(dir, config, summary)


@pytest.fixture(scope="session")
def events_run(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """Built events in .dqf files: two seconds of the builder."""
    return run_in(tmp_path_factory.mktemp("events"), builder_config("{kind: file}"),
                  "--duration", "2")


@pytest.fixture(scope="session")
def frd_run(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """Built events in CMS FRD files (a run directory): two seconds of the builder."""
    return run_in(tmp_path_factory.mktemp("frd"),
                  builder_config("{kind: frd, events_per_file: 500}"), "--duration", "2")


@pytest.fixture(scope="session")
def timeslice_run(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """A time-slice archive: 40 timeslices of two inputs."""
    return run_in(tmp_path_factory.mktemp("timeslices"), timeslice_config(), "--duration", "0")


@pytest.fixture
def chdir_tmp(tmp_path: Path) -> Iterator[Path]:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(cwd)


#: The repository's examples (the tests run from a checkout).
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def farm_config(processing: str, count: int = 2000, accept_output: int = 4096) -> str:
    """An SFC generating `count` events of about 8 kB for four workers, two per process, over
    tcp; the workers' processing as given (a flow mapping)."""
    ports = free_ports(6)
    text = f"""run: {{output: ./data}}
transports: {{default: tcp, pipeline_depth: 8, max_message_size: 1048576}}
contexts:
  - name: sfc
    host: 127.0.0.1
    control_port: {ports[0]}
    data_port: {ports[1]}
    applications:
      - {{type: sfc, id: sfc0, workers: [w0, w1, w2, w3], policy: tokens, count: {count},
         output: {{kind: file}}, event_size: {{dist: uniform, mean: 8192, sd: 4000, max: 16384}}}}
"""
    for i, ids in enumerate((("w0", "w1"), ("w2", "w3"))):
        text += f"""  - name: workers{i}
    host: 127.0.0.1
    control_port: {ports[2 + 2 * i]}
    data_port: {ports[3 + 2 * i]}
    applications:
"""
        for w in ids:
            text += (f"      - {{type: worker, id: {w}, sfc: sfc0, output_bytes: {accept_output},"
                     f" processing: {processing}}}\n")
    return text
