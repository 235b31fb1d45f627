"""The same bits whatever kernels the libraries pick at run time: a study and the API's calls
(``tests/same_bits_run.py``) are run in fresh processes under settings that change those kernels, and
every number they return or write must equal the default run's, and the stored golden digests.

The settings: OpenBLAS's core type (``OPENBLAS_CORETYPE``: Haswell, Zen, Prescott, the generic x86-64
kernels, and SkylakeX where the CPU has AVX-512), numpy's SIMD targets narrowed
(``NPY_DISABLE_CPU_FEATURES``: the AVX-512 groups, then AVX2 as well), glibc's libm without its FMA
variants (``GLIBC_TUNABLES``), and a generic x86-64 altogether: those three at their most generic with
numba compiling for a generic x86-64 (``NUMBA_CPU_NAME=generic``, SSE2 only) into an empty cache, so
that every kernel is compiled for it (compiling them all takes about 25 s of CPU, so numba's target is
changed in this one setting only). A setting the CPU cannot run (AVX-512 kernels on a CPU without it),
or that would run the default's kernels again, is skipped, saying why.
``BIASDASK_REGENERATE_GOLDEN=1`` rewrites ``tests/golden/same_bits.json`` from the default run.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
GOLDEN = HERE / "golden" / "same_bits.json"
SCRIPT = HERE / "same_bits_run.py"

#: numpy 2.4's names of its dispatched groups: X86_V4 and later (AVX-512), X86_V3 (AVX2, FMA3)
NUMPY_AVX512 = "X86_V4 AVX512_ICL AVX512_SPR"
NUMPY_AVX2 = f"{NUMPY_AVX512} X86_V3"
#: glibc (2.33 and later) then picks the SSE2 variants of exp, log, pow, sin...
GLIBC_NO_FMA = "glibc.cpu.hwcaps=-AVX2,-FMA"

SETTINGS: dict[str, dict[str, str]] = {
    "openblas-haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "openblas-zen": {"OPENBLAS_CORETYPE": "Zen"},
    "openblas-prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "openblas-skylakex": {"OPENBLAS_CORETYPE": "SkylakeX"},
    "numpy-no-avx512": {"NPY_DISABLE_CPU_FEATURES": NUMPY_AVX512},
    "numpy-no-avx2": {"NPY_DISABLE_CPU_FEATURES": NUMPY_AVX2},
    "glibc-no-fma": {"GLIBC_TUNABLES": GLIBC_NO_FMA},
    "all-generic": {
        "OPENBLAS_CORETYPE": "Prescott",
        "NPY_DISABLE_CPU_FEATURES": NUMPY_AVX2,
        "NUMBA_CPU_NAME": "generic",
        "GLIBC_TUNABLES": GLIBC_NO_FMA,
    },
}


def cpu_flags() -> set[str]:
    """The CPU's feature flags (``/proc/cpuinfo``; empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


@functools.cache
def _openblas_core(env: tuple[tuple[str, str], ...]) -> str | None:
    """The core type whose kernels numpy's OpenBLAS runs in a process with ``env`` added (None: unknown;
    OpenBLAS maps a core type it has no kernels of its own for to another, e.g. Zen to Haswell)."""
    code = (
        "import numpy, threadpoolctl\n"
        "print(*[i.get('architecture') for i in threadpoolctl.threadpool_info() if i.get('internal_api') == 'openblas'])"
    )
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, **dict(env)}, capture_output=True, text=True)
    return done.stdout.split()[0] if done.returncode == 0 and done.stdout.split() else None


def openblas_core(env: dict[str, str]) -> str | None:
    return _openblas_core(tuple(sorted(env.items())))


def why_not(setting: str, flags: set[str]) -> str | None:
    """Why ``setting`` cannot run on a CPU with ``flags``, or would change nothing (None: it runs and
    changes a kernel)."""
    if not flags:
        return "no /proc/cpuinfo: the CPU's features are unknown"
    core = SETTINGS[setting].get("OPENBLAS_CORETYPE")
    if setting == "openblas-skylakex" and "avx512f" not in flags:
        return "OpenBLAS's SkylakeX kernels need AVX-512, which this CPU lacks"
    if setting in ("openblas-haswell", "openblas-zen") and not {"avx2", "fma"} <= flags:
        return f"OpenBLAS's {core} kernels need AVX2 and FMA, which this CPU lacks"
    if setting.startswith("openblas-"):
        runs = openblas_core({"OPENBLAS_CORETYPE": core})
        if runs == openblas_core({}):
            return f"OPENBLAS_CORETYPE={core} runs the kernels the default run does on this CPU ({runs})"
        for other in list(SETTINGS)[: list(SETTINGS).index(setting)]:
            other_core = SETTINGS[other].get("OPENBLAS_CORETYPE")
            if other.startswith("openblas-") and openblas_core({"OPENBLAS_CORETYPE": other_core}) == runs:
                return f"OPENBLAS_CORETYPE={core} runs the kernels {other} runs ({runs})"
    if setting == "numpy-no-avx512" and "avx512f" not in flags:
        return "this CPU has no AVX-512: numpy already runs its AVX2 kernels (the default run)"
    if setting == "glibc-no-fma" and not {"fma", "avx2"} <= flags:
        return "this CPU has no FMA: glibc already runs its SSE2 variants (the default run)"
    return None


def run_digests(work: Path, env: dict[str, str], fresh_cache: bool) -> dict[str, str]:
    """Run the script in a fresh process with ``env`` added; its digests."""
    work.mkdir()
    full = {**os.environ, **env}
    if fresh_cache:  # numba would otherwise load kernels compiled for another target
        full["NUMBA_CACHE_DIR"] = str(work / "numba-cache")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(work)], env=full, capture_output=True, text=True, timeout=1800
    )
    assert done.returncode == 0, f"{env}: {done.stderr[-3000:]}"
    return json.loads(done.stdout)


def differences(want: dict[str, str], got: dict[str, str]) -> list[str]:
    keys = sorted(set(want) | set(got))
    return [f"{k}: {want.get(k, '(none)')} -> {got.get(k, '(none)')}" for k in keys if want.get(k) != got.get(k)]


@pytest.fixture(scope="module")
def default_digests(tmp_path_factory) -> dict[str, str]:
    got = run_digests(tmp_path_factory.mktemp("same-bits") / "default", {}, fresh_cache=False)
    if os.environ.get("BIASDASK_REGENERATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    return got


@pytest.mark.slow
def test_default_run_is_bit_identical_to_the_golden_digests(default_digests):
    diff = differences(json.loads(GOLDEN.read_text()), default_digests)
    assert not diff, f"{len(diff)} values changed:\n" + "\n".join(diff[:40])


@pytest.mark.slow
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_every_number_is_the_same_whatever_kernels_the_libraries_pick(setting, default_digests, tmp_path):
    reason = why_not(setting, cpu_flags())
    if reason:
        pytest.skip(reason)
    env = SETTINGS[setting]
    got = run_digests(tmp_path / setting, env, fresh_cache="NUMBA_CPU_NAME" in env)
    diff = differences(default_digests, got)
    assert not diff, f"{setting} {env}: {len(diff)} values differ:\n" + "\n".join(diff[:40])
