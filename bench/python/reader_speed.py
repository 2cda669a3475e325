"""How fast daqflow.open reads a run's files, beside the tools that read the same bytes.

    build/python-venv/bin/python bench/python/reader_speed.py run-data [--rounds 5]

With verification (every CRC checked) against `daqflow dump` (which checks what verify=True
checks); without it, against `cat FILES > /dev/null`. The files are read once first so that
every figure is from the page cache; the rounds are interleaved and the medians compared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from collections.abc import Callable

import daqflow
from daqflow._cli import executable


def files_of(path: str) -> list[str]:
    return [f.path for f in daqflow.open(path).files]


def timed(what: Callable[[], object]) -> float:
    start = time.perf_counter()
    what()
    return time.perf_counter() - start


def python_verified(path: str) -> None:
    for event in daqflow.open(path, verify=True):
        event.fragments


def python_fragments(path: str) -> None:
    for event in daqflow.open(path):
        event.fragments


def python_read_all(path: str) -> None:
    data = daqflow.open(path)
    data.read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="a run's data folder (or one file)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    files = files_of(args.path)
    size = sum(os.path.getsize(f) for f in files)
    events = len(daqflow.open(args.path))
    dump = [executable(), "dump", *files]
    cat = ["cat", *files]

    def run_quiet(command: list[str]) -> None:
        subprocess.run(command, stdout=subprocess.DEVNULL, check=True)

    cases: dict[str, Callable[[], object]] = {
        "daqflow dump (verifies)": lambda: run_quiet(dump),
        "daqflow.open(verify=True), fragments of every event": lambda: python_verified(args.path),
        "cat > /dev/null": lambda: run_quiet(cat),
        "daqflow.open, fragments of every event": lambda: python_fragments(args.path),
        "daqflow.open, read() of every event": lambda: python_read_all(args.path),
    }
    for what in cases.values():  # into the page cache, and warm
        what()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, what in cases.items():
            times[name].append(timed(what))
    print(f"{len(files)} files, {events} events, {size / 1e9:.2f} GB; medians of {args.rounds} "
          "interleaved rounds")
    median = {name: statistics.median(t) for name, t in times.items()}
    for name, t in median.items():
        print(f"  {name:55s} {t:7.3f} s  {size / t / 1e9:6.2f} GB/s  "
              f"{events / t / 1e6:6.3f} M events/s")
    verified = median["daqflow dump (verifies)"] / median[
        "daqflow.open(verify=True), fragments of every event"]
    print(f"verified: daqflow.open at {verified:.2f}x daqflow dump's speed")


if __name__ == "__main__":
    main()
