"""The core install: without any extra, the demo and the in-memory path run, and every feature that needs an
extra says which one in one line.

The extras' packages are hidden from fresh processes (and from the worker processes they start) by a
``sitecustomize`` module on ``PYTHONPATH`` whose import hook refuses them, as if they were not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

EXTRAS = {
    "matplotlib": "plot",
    "s3fs": "s3",
    "aiohttp": "http",
    "gcsfs": "gcs",
    "wordfreq": "frequency",
    "dask_gateway": "gateway",
}

SITECUSTOMIZE = f"""
import sys

HIDDEN = {sorted(EXTRAS)!r}


class HideExtras:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, HideExtras())
"""


@pytest.fixture(scope="module")
def core_env(tmp_path_factory) -> dict[str, str]:
    site = tmp_path_factory.mktemp("core-site")
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    env.pop("DASK_GATEWAY__ADDRESS", None)
    return env


def _python(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_the_hook_hides_the_extras(core_env, tmp_path):
    # Without this the other tests could pass with the extras in reach.
    done = _python(
        """
        for name in ["matplotlib", "s3fs", "aiohttp", "wordfreq"]:
            try:
                __import__(name)
            except ImportError:
                continue
            raise SystemExit(name + " imported")
        """,
        core_env,
        tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_the_demo_runs_on_the_core_and_names_the_plot_extra(core_env, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "biasdask.cli", "demo", "--words", "2000", "--permutations", "99", "--workers", "1"],
        env=core_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "biasdask-demo" / "results.zarr" / "zarr.json").exists()
    assert not (tmp_path / "biasdask-demo" / "report").exists()
    assert "pip install 'biasdask[plot]'" in done.stdout
    assert "gender" in done.stdout  # the table


def test_the_in_memory_path_runs_on_the_core(core_env, tmp_path):
    done = _python(
        """
        import numpy as np
        import biasdask
        from biasdask.lexicon import weat_test

        t = weat_test(7)
        words = [*t.x, *t.y, *t.a, *t.b, *(f"w{i}" for i in range(500))]
        vectors = np.random.default_rng(0).standard_normal((len(words), 20))
        emb = biasdask.as_embeddings(vectors, words, language="en")
        res = biasdask.weat(emb, test="weat7", resampling=biasdask.Resampling(seed=1))
        options = biasdask.Resampling(n_permutations=99, seed=1)
        full = biasdask.full_vocabulary_test(emb, list(t.a), list(t.b), method="zipf", resampling=options)
        print(np.isfinite(res.effect_size), np.isfinite(full.p_value))
        """,
        core_env,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "True"]


@pytest.mark.parametrize(
    ("code", "extra"),
    [
        ("import biasdask.plot", "plot"),
        ("import biasdask; biasdask.open_embeddings('s3://bucket/en.zarr')", "s3"),
        ("import biasdask; biasdask.open_embeddings('https://example.org/en.zarr')", "http"),
        ("import biasdask; biasdask.open_embeddings('gs://bucket/en.zarr')", "gcs"),
        ("from biasdask.engine.scores import check_frequency_language; check_frequency_language('en')", "frequency"),
    ],
)
def test_a_feature_of_a_missing_extra_names_it(core_env, tmp_path, code, extra):
    done = _python(
        f"""
        try:
            {code}
        except ImportError as exc:
            raise SystemExit("ImportError: " + str(exc))
        except ValueError as exc:
            raise SystemExit("ValueError: " + str(exc))
        """,
        core_env,
        tmp_path,
    )
    assert done.returncode == 1
    assert f"pip install 'biasdask[{extra}]'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_cli_names_the_extra_in_one_line(core_env, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "biasdask.cli", "plot", str(tmp_path / "results.zarr"), "--output", str(tmp_path)],
        env=core_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "biasdask: error: matplotlib is not installed (needed for biasdask's figures): pip install 'biasdask[plot]'"
    )
