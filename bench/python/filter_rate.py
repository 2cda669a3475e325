"""A farm's event rate with its workers deciding in Python, beside the C plugin making the same
selection on the same events.

    build/python-venv/bin/python bench/python/filter_rate.py --plugin build/lib/libdaqflow_farm_select.so

One SFC generates the same events for every run (--events, uniform sizes around --size bytes) and
dispatches them by tokens to --workers workers, two per process, over tcp. The workers decide
with examples/plugins/farm_select.c (a shared library) or examples/plugins/farm_select.py (the
same hash, selection and output, in numpy) through the Python filter host. The rounds are
interleaved; the medians of the SFC's decided events per second are compared.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from daqflow._cli import executable

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def config(processing: str, events: int, size: int, workers: int) -> str:
    ports = free_ports(2 + workers)
    ids = [f"w{i}" for i in range(workers)]
    text = f"""run: {{output: ./data}}
transports: {{default: tcp, pipeline_depth: 8, max_message_size: 1048576}}
contexts:
  - name: sfc
    host: 127.0.0.1
    control_port: {ports[0]}
    data_port: {ports[1]}
    applications:
      - {{type: sfc, id: sfc0, workers: [{', '.join(ids)}], policy: tokens, count: {events},
         output: {{kind: discard}}, event_size: {{dist: uniform, mean: {size}, sd: {size // 4},
         max: {2 * size}}}}}
"""
    for p in range(0, workers, 2):
        text += f"""  - name: workers{p // 2}
    host: 127.0.0.1
    control_port: {ports[2 + p]}
    data_port: {ports[3 + p]}
    applications:
"""
        for w in ids[p : p + 2]:
            text += f"      - {{type: worker, id: {w}, sfc: sfc0, output_bytes: 4096, processing: {processing}}}\n"
    return text


def rate(text: str) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "farm.yaml"
        path.write_text(text)
        summary_path = Path(work) / "summary.json"
        subprocess.run([executable(), "run", str(path), "--duration", "0", "--summary",
                        str(summary_path), "--no-preflight"], cwd=work, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "DAQFLOW_PYTHON": sys.executable})
        summary = json.loads(summary_path.read_text())
    sfc = summary["applications"]["sfc0"]["results"]
    return sfc["events_decided"] / summary["duration_s"], sfc["events_accepted"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plugin", required=True, help="libdaqflow_farm_select.so")
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    kinds = {
        "C plugin (farm_select.c)":
            f'{{kind: plugin, library: {os.path.abspath(args.plugin)}, config: "every=200 keep=1024"}}',
        "Python (farm_select.py)":
            f"{{kind: python, module: farm_select, function: select, path: {EXAMPLES / 'plugins'}}}",
    }
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    accepted: dict[str, set[int]] = {k: set() for k in kinds}
    for _ in range(args.rounds):
        for name, processing in kinds.items():
            r, a = rate(config(processing, args.events, args.size, args.workers))
            rates[name].append(r)
            accepted[name].add(a)
    print(f"{args.events} events of about {args.size} B, {args.workers} workers, medians of "
          f"{args.rounds} interleaved rounds")
    for name, r in rates.items():
        print(f"  {name:28s} {statistics.median(r):9.0f} events/s  (rounds: "
              f"{', '.join(f'{x:.0f}' for x in r)}; accepted {sorted(accepted[name])})")
    c, py = (statistics.median(r) for r in rates.values())
    print(f"Python at {py / c:.2f}x the C plugin's rate")


if __name__ == "__main__":
    main()
