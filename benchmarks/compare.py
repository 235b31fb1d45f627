"""Two source trees side by side: a benchmark script of each run in turn, and the ratios of their figures.

Run ``python benchmarks/compare.py BEFORE AFTER`` with two checkouts of biasdask (for example a worktree
at an older commit and this one). For each script chosen with ``--scripts`` it runs
``<tree>/benchmarks/<script>.py`` of each tree in a fresh process with ``PYTHONPATH`` set to that tree
(checked first: ``biasdask`` must import from it), interleaved: before, after, before, after, ... for
``--warm-up`` rounds that are discarded (numba compiles each tree's kernels into its cache on the first
run) and then ``--rounds`` rounds. It parses the key figures from each run's output and prints, per
figure, the best of the rounds of each tree, the ratio after / before of the bests (oriented so that
above 1 is slower: for a rate it is before / after) and the range of the ratios of the rounds' pairs.

Beside the figures: the date, the CPU model (``/proc/cpuinfo``), the load average at the start of each
run, and the CPU that other processes used during the runs, in cores (the machine's busy time from
``/proc/stat`` less the benchmark's own processes).

The scripts run at modest sizes unless ``--full`` is given (``permutation``: N = 100,000 and 2,000,000
on one core, no cluster, 200,000 words for the scores; ``study``: 2 languages of 200,000 words on two
workers, no first-task measurement; ``in_memory``: its defaults), so that the whole comparison takes
about a quarter of an hour on two cores.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from machine import cpu_model

# One figure of a run: its value and whether a larger value is better (a rate) or worse (a time).
Figures = dict[str, tuple[float, Literal["higher", "lower"]]]

MODEST = {
    "permutation": [
        "--sizes",
        "100000",
        "2000000",
        "--workers",
        "1",
        "--scores-words",
        "200000",
    ],
    "in_memory": [],
    "study": ["--languages", "2", "--configurations", "2", "--skip-first-task"],
}


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def parse_permutation(out: str) -> Figures:
    """Figures of ``benchmarks/permutation.py``: per pool size the kernel's rates and its ratios to the
    same process's baselines (numpy, one ``np.sum`` pass, the adds alone), then the scores."""
    figures: Figures = {}
    section = ""
    for line in out.splitlines():
        if m := re.match(r"N = ([\d,]+) real scores", line):
            section = f"N = {m[1]}: "
        elif m := re.match(r"N = ([\d,]+) \(scipy", line):
            section = f"N = {m[1]}, scipy: "
        elif line.startswith("scores, N ="):
            section = "scores: "
        if m := re.search(r"biasdask kernel, 1 core .*perm/s\s+\(([\d,.]+) per CPU-second\)", line):
            figures[section + "kernel perm per CPU-s"] = (_number(m[1]), "higher")
        if m := re.search(r"= ([\d,]+)x numpy \(([\d,]+)x in CPU time\)", line):
            figures[section + "kernel x numpy (CPU)"] = (_number(m[2]), "higher")
        if m := re.search(r"= ([\d,]+)x scipy \(([\d,]+)x in CPU time\)", line):
            figures[section + "kernel x scipy (CPU)"] = (_number(m[2]), "higher")
        if m := re.search(r"one weighting: ([\d,]+) perm/s per core.*2 weightings cost ([\d.]+)x", line):
            figures[section + "one weighting, perm/s (CPU, best of repeats)"] = (_number(m[1]), "higher")
            figures[section + "2 weightings / 1 (CPU)"] = (_number(m[2]), "lower")
        if m := re.search(r"batch task .*: ([\d,]+) permutations, ([\d.]+) s", line):
            figures[section + "batch task, ms per permutation (wall)"] = (1e3 * _number(m[2]) / _number(m[1]), "lower")
        if m := re.search(r"kernel ([\d.]+) ms per permutation = ([\d.]+)x the floor", line):
            figures[section + "kernel / one np.sum pass (CPU)"] = (_number(m[2]), "lower")
        if m := re.search(r"sums ([\d.]+) G pool items .* two weightings sums ([\d.]+) G = (\d+)% of it", line):
            figures[section + "add floor, G items/s"] = (_number(m[1]), "higher")
            figures[section + "kernel, 2 weightings, G items/s"] = (_number(m[2]), "higher")
        if m := re.search(r"biasdask scores \(u\)\s+([\d.]+) s .*\s([\d.]+)x the plain read", line):
            figures[section + "u, s"] = (_number(m[1]), "lower")
            figures[section + "u / plain read"] = (_number(m[2]), "lower")
        if m := re.search(r"scores = ([\d.]+)x it", line):
            figures[section + "u / numpy matvec"] = (_number(m[1]), "lower")
    return figures


def parse_in_memory(out: str) -> Figures:
    """Figures of ``benchmarks/in_memory.py``: the two calls' CPU times and the second against numpy."""
    figures: Figures = {}
    for line in out.splitlines():
        if m := re.match(r"weat7 (first|second) call\s+([\d.]+) ms wall\s+([\d.]+) ms CPU", line):
            figures[f"{m[1]} call, ms CPU"] = (_number(m[3]), "lower")
            figures[f"{m[1]} call, ms wall"] = (_number(m[2]), "lower")
        if m := re.search(r"numpy baseline\s+([\d.]+) ms wall.*ratio second/numpy = ([\d.]+)", line):
            figures["numpy WEAT, ms wall"] = (_number(m[1]), "lower")
            figures["second call / numpy WEAT"] = (_number(m[2]), "lower")
    return figures


def parse_study(out: str) -> Figures:
    """Figures of ``benchmarks/study.py``: per configuration the stages' compute, the run's wall time and
    the ratio to the user's way; then the permutation kernel and the extrapolated 26-language study."""
    figures: Figures = {}
    section = ""
    for line in out.splitlines():
        if m := re.match(r"== (\w+): \d+ single-thread workers", line):
            section = f"{m[1]}: "
        if m := re.match(r"ingest\s+([\d.]+) s wall\s+([\d.]+) MB/s", line):
            figures[section + "ingest, MB/s"] = (_number(m[2]), "higher")
        if m := re.match(r"(scores|permutations)\s+[\d.]+ s span\s+([\d.]+) s compute \(([\d.]+) s CPU\)", line):
            figures[section + f"{m[1]}, s compute"] = (_number(m[2]), "lower")
            figures[section + f"{m[1]}, s CPU"] = (_number(m[3]), "lower")
        if m := re.match(r"run\s+([\d.]+) s wall", line):
            figures[section + "run, s wall"] = (_number(m[1]), "lower")
        if m := re.match(r"biasdask \((\w+), ingest \+ run\) [\d.]+ s: ([\d,]+)x faster", line):
            figures[f"{m[1]}: x the user's way"] = (_number(m[2]), "higher")
        if m := re.match(
            r"permutation kernel at N = [\d,]+ .*: ([\d,]+) permutations/s, pool prepared in ([\d.]+) s", line
        ):
            figures["kernel at N = 2,000,000, perm/s (CPU)"] = (_number(m[1]), "higher")
            figures["pool at N = 2,000,000, s (CPU)"] = (_number(m[2]), "lower")
        if m := re.match(r"(\w+): scores ([\d,]+) CPU-s \(([\d,]+) MB of store per CPU-s\).* = ([\d,]+) CPU-s ", line):
            figures[f"{m[1]}: scores, MB of store per CPU-s"] = (_number(m[3]), "higher")
            figures[f"{m[1]}: 26-language study, CPU-s (extrapolated)"] = (_number(m[4]), "lower")
    return figures


PARSERS: dict[str, Callable[[str], Figures]] = {
    "permutation": parse_permutation,
    "in_memory": parse_in_memory,
    "study": parse_study,
}


def busy_seconds() -> float:
    """CPU-seconds the whole machine has been busy (``/proc/stat``: all but idle and iowait)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = values
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def tree_env(tree: Path) -> dict[str, str]:
    """The environment of a run: this one with ``tree`` first on ``PYTHONPATH``."""
    env = dict(os.environ, MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def check_tree(tree: Path) -> str:
    """Raise SystemExit unless ``biasdask`` imports from ``tree`` under its environment; its commit."""
    found = subprocess.run(
        [sys.executable, "-c", "import biasdask; print(biasdask.__file__)"],
        capture_output=True,
        text=True,
        env=tree_env(tree),
        cwd=tree,
    )
    path = Path(found.stdout.strip() or "?").resolve()
    if found.returncode or not path.is_relative_to(tree):
        raise SystemExit(f"{tree}: biasdask imports from {path}, not from this tree")
    head = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h %cs"], capture_output=True, text=True)
    return head.stdout.strip() or "not a git checkout"


@dataclass
class Run:
    """One run of a script from one tree: its figures, the 1-minute load average at its start and the
    cores that other processes used during it."""

    figures: Figures
    load: float
    others: float
    seconds: float


@dataclass
class Side:
    """All runs of one script from one tree."""

    tree: Path
    runs: list[Run] = field(default_factory=list)


def run_once(tree: Path, script: str, args: list[str], timeout: float) -> Run:
    """Run ``<tree>/benchmarks/<script>.py`` in a fresh process; raise SystemExit if it fails."""
    load = os.getloadavg()[0]
    busy, ours = busy_seconds(), resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, str(tree / "benchmarks" / f"{script}.py"), *args],
        capture_output=True,
        text=True,
        env=tree_env(tree),
        cwd=tree,
        timeout=timeout,
    )
    seconds = time.perf_counter() - start
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    ours_cpu = used.ru_utime + used.ru_stime - ours.ru_utime - ours.ru_stime
    if out.returncode:
        raise SystemExit(f"{tree}/benchmarks/{script}.py failed:\n{out.stderr[-3000:]}")
    figures = PARSERS[script](out.stdout)
    if not figures:
        raise SystemExit(f"{tree}/benchmarks/{script}.py: no figures found in its output:\n{out.stdout[-3000:]}")
    others = max(0.0, busy_seconds() - busy - ours_cpu) / seconds
    return Run(figures, load, others, seconds)


def best(runs: list[Run], name: str) -> float | None:
    """The best value of a figure over the runs that printed it."""
    values = [r.figures[name] for r in runs if name in r.figures]
    if not values:
        return None
    pick = max if values[0][1] == "higher" else min
    return pick(v for v, _ in values)


def slowdown(before: float, after: float, better: str) -> float:
    """after / before for a time, before / after for a rate: above 1 is slower."""
    return after / before if better == "lower" else before / after


def report(script: str, sides: tuple[Side, Side]) -> str:
    """A Markdown table of the script's figures: best of rounds of each tree, the ratio, its range."""
    before, after = sides
    names = list(dict.fromkeys(n for side in sides for r in side.runs for n in r.figures))
    lines = [
        f"### {script}",
        "",
        "| figure | before | after | after / before (> 1: slower) | rounds' pairs |",
        "|---|---|---|---|---|",
    ]
    for name in names:
        b, a = best(before.runs, name), best(after.runs, name)
        better = next(r.figures[name][1] for side in sides for r in side.runs if name in r.figures)
        pairs = [
            slowdown(rb.figures[name][0], ra.figures[name][0], better)
            for rb, ra in zip(before.runs, after.runs)
            if name in rb.figures and name in ra.figures and rb.figures[name][0] and ra.figures[name][0]
        ]
        ratio = f"**{slowdown(b, a, better):.3f}**" if a and b else "n/a"
        spread = f"{min(pairs):.3f}-{max(pairs):.3f}" if pairs else ""
        arrow = "↑" if better == "higher" else "↓"
        lines.append(f"| {name} {arrow} | {_fmt(b)} | {_fmt(a)} | {ratio} | {spread} |")
    for label, side in (("before", before), ("after", after)):
        loads = [r.load for r in side.runs]
        others = [r.others for r in side.runs]
        lines.append(
            f"\n{label}: {len(side.runs)} runs of {min(r.seconds for r in side.runs):.0f}-"
            f"{max(r.seconds for r in side.runs):.0f} s; load average {min(loads):.2f}-{max(loads):.2f} at their "
            f"starts; other processes used {min(others):.2f}-{max(others):.2f} cores during them"
        )
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def main(argv: list[str] | None = None) -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog="Figures marked ↑ are better higher (rates), ↓ lower (times)."
    )
    parser.add_argument("before", type=Path, help="the source tree measured first in each round")
    parser.add_argument("after", type=Path, help="the source tree measured second in each round")
    parser.add_argument(
        "--scripts", nargs="+", choices=sorted(PARSERS), default=list(PARSERS), help="benchmarks to compare"
    )
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds (default 3; the best is kept)")
    parser.add_argument("--warm-up", type=int, default=1, help="discarded rounds first (default 1: numba compiles)")
    parser.add_argument("--full", action="store_true", help="the scripts' own default sizes instead of modest ones")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds a single run may take")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.warm_up < 0:
        parser.error("--rounds must be at least 1 and --warm-up at least 0")
    trees = (args.before.resolve(), args.after.resolve())
    commits = [check_tree(tree) for tree in trees]

    print(
        f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC · {cpu_model()} · {os.cpu_count()} logical CPUs · "
        f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} · Python {platform.python_version()}"
    )
    for label, tree, commit in zip(("before", "after"), trees, commits):
        print(f"{label}: {tree} ({commit})")
    for script in args.scripts:
        extra = [] if args.full else MODEST[script]
        print(f"\n{script}.py {' '.join(extra)}: {args.warm_up} warm-up and {args.rounds} rounds", flush=True)
        sides = (Side(trees[0]), Side(trees[1]))
        for round_ in range(args.warm_up + args.rounds):
            for side in sides:
                run = run_once(side.tree, script, extra, args.timeout)
                if round_ >= args.warm_up:
                    side.runs.append(run)
                print(
                    f"  round {round_ + 1 - args.warm_up if round_ >= args.warm_up else 'warm-up'}, "
                    f"{'before' if side is sides[0] else 'after'}: {run.seconds:.0f} s, load {run.load:.2f}, "
                    f"others {run.others:.2f} cores",
                    flush=True,
                )
        print("\n" + report(script, sides), flush=True)
    print(f"\nload average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
