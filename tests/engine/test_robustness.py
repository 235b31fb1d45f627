"""Leave-one-attribute-word-out sensitivity of the full-vocabulary test, on real French vectors."""

from __future__ import annotations

import math
import subprocess
import sys

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import biasdask
from biasdask import Resampling, Vocabulary
from biasdask.demo import filler_words
from biasdask.engine.scores import scores
from biasdask.lexicon import iat_attribute_terms
from tests.stores import generated_store


def _french(shared_data):
    """The fastText cc French IAT vectors, read by a plain parse, as an in-memory embedding."""
    lines = (shared_data / "iat" / "cc" / "fr.vec").read_bytes().split(b"\n")
    rows = [line.split(b" ") for line in lines[1:] if line]
    words = [r[0].decode() for r in rows]
    vec = np.array([[float(x) for x in r[1:]] for r in rows], dtype=np.float32)
    emb = xr.Dataset(
        {
            "vectors": (("word", "dim"), da.from_array(vec, chunks=(16, vec.shape[1]))),
            "norm": (("word",), np.linalg.norm(vec.astype(np.float64), axis=1).astype(np.float32)),
        },
        coords={"word": np.array(words, dtype=object), "rank": ("word", np.arange(1, len(words) + 1))},
        attrs={"language": "fr"},
    )
    return emb, words, vec


def _term_vector(table, term):
    means = [
        np.mean([table[t] for t in tr if t in table], axis=0) for tr in term.translations if any(t in table for t in tr)
    ]
    return np.mean(means, axis=0) if means else None


def test_leave_one_out_against_numpy(shared_data, dask_client, tmp_path):
    emb, words, vec = _french(shared_data)
    a, b = iat_attribute_terms("cc", "fr")
    sens = biasdask.attribute_sensitivity(
        emb, a, b, client=dask_client, progress=False, resampling=Resampling(n_permutations=999, seed=3)
    )
    table = {w: vec[i].astype(np.float64) for i, w in enumerate(words)}
    used_a = [t for t in a if _term_vector(table, t) is not None]
    used_b = [t for t in b if _term_vector(table, t) is not None]
    assert list(sens["left_out"].values) == ["", *[t.label for t in used_a], *[t.label for t in used_b]]
    assert list(sens["side"].values) == ["", *"A" * len(used_a), *"B" * len(used_b)]
    unit = lambda x: x / np.linalg.norm(x)  # noqa: E731
    w = np.array([unit(table[x]) for x in words])
    for i, (left, side) in enumerate(zip(sens["left_out"].values, sens["side"].values)):
        sa = [t for t in used_a if not (side == "A" and t.label == left)]
        sb = [t for t in used_b if not (side == "B" and t.label == left)]
        da = np.mean([unit(_term_vector(table, t)) for t in sa], axis=0)
        db = np.mean([unit(_term_vector(table, t)) for t in sb], axis=0)
        u = w @ (da - db)  # oracle: u per word, then the dummy-language test's s, d, z
        n = u.size
        pool = np.concatenate([u, np.zeros(n)])
        s = u.sum()
        d = u.mean() / pool.std(ddof=1)
        z = s / math.sqrt(4 * n * n * pool.var() / (2 * n - 1))
        row = sens.isel(left_out=i)
        assert float(row["statistic"]) == pytest.approx(s, rel=1e-5)
        assert float(row["effect_size"]) == pytest.approx(d, rel=1e-5)
        assert float(row["z_score"]) == pytest.approx(z, rel=1e-5)
        assert (int(row["n_a"]), int(row["n_b"])) == (len(sa), len(sb))
        assert 0 < float(row["p_value"]) <= 1
    # The same seed in every row: the row with everything equals full_vocabulary_test.
    full = biasdask.full_vocabulary_test(
        emb, a, b, client=dask_client, progress=False, resampling=Resampling(n_permutations=999, seed=3)
    )
    assert float(sens["p_value"].sel(left_out="")) == full.p_value
    assert float(sens["statistic"].sel(left_out="")) == full.statistic

    from biasdask.plot import plot_attribute_sensitivity

    fig = plot_attribute_sensitivity(sens)
    fig.savefig(tmp_path / "sensitivity.png", dpi=100)
    assert (tmp_path / "sensitivity.png").stat().st_size > 10_000


def test_leaving_out_a_sets_only_word_gives_nan(shared_data, dask_client):
    emb, _, _ = _french(shared_data)
    sens = biasdask.attribute_sensitivity(
        emb,
        ["homme", "il"],
        ["femme"],
        client=dask_client,
        progress=False,
        resampling=Resampling(n_permutations=99, seed=1),
    )
    assert list(sens["left_out"].values) == ["", "homme", "il", "femme"]
    assert np.isnan(float(sens["effect_size"].sel(left_out="femme"))) and int(sens["n_b"].sel(left_out="femme")) == -1
    assert np.isfinite(sens["effect_size"].values[:3]).all()
    # Scores of one left-out word equal a direct call without that word.
    u = scores(emb, ["il"], ["femme"], methods=["uniform"])["u"].values
    assert float(sens["statistic"].sel(left_out="homme")) == pytest.approx(
        float(np.nansum(u.astype(np.float64))), rel=1e-6
    )


def test_options_are_the_same_in_every_row(shared_data, dask_client):
    """exclude_attributes and dedupe_vectors give each row the targets of the full test."""
    emb, words, vec = _french(shared_data)
    vec = vec.copy()
    vec[words.index("bureau")] = vec[words.index("affaires")]  # a shared vector (later word dropped)
    emb = emb.assign(vectors=(("word", "dim"), da.from_array(vec, chunks=(16, vec.shape[1]))))
    kw = dict(vocabulary=Vocabulary(exclude_attributes=True, dedupe_vectors=True))
    sens = biasdask.attribute_sensitivity(
        emb,
        ["homme", "il"],
        ["femme", "elle"],
        resampling=Resampling(n_permutations=99, seed=1),
        client=dask_client,
        progress=False,
        **kw,
    )
    for left, a, b in [("", ["homme", "il"], ["femme", "elle"]), ("homme", ["il"], ["femme", "elle"])]:
        sc = scores(
            emb,
            a,
            b,
            methods=["uniform"],
            vocabulary=Vocabulary(exclude_words=["homme", "il", "femme", "elle"], dedupe_vectors=True),
        )
        u = sc["u"].values
        assert np.isnan(u[words.index("bureau")]) and np.isnan(u[words.index("homme")])
        assert float(sens["statistic"].sel(left_out=left)) == pytest.approx(
            float(np.nansum(u.astype(np.float64))), rel=1e-6
        )


def test_without_a_client_it_starts_no_cluster_so_a_script_needs_no_main_guard(tmp_path):
    """A script without ``if __name__ == "__main__":`` (a LocalCluster of processes would re-run it in
    every worker it spawns, and die with "Nanny failed to start") runs on Dask's threaded scheduler."""
    store = generated_store(tmp_path, "fr", words=("homme", "femme"), n_words=300, dim=10, strength=0.2, seed=1)
    filler = filler_words("homme", "femme", 300)[7]
    script = tmp_path / "script.py"
    script.write_text(
        "import biasdask\n"
        "from distributed.client import _get_global_client\n"
        f"sens = biasdask.attribute_sensitivity({store!r}, ['homme'], ['femme', {filler!r}], "
        "resampling=biasdask.Resampling(n_permutations=99, seed=1), progress=False)\n"
        "print(sens['left_out'].values.tolist(), _get_global_client())\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"['', 'homme', 'femme', {filler!r}] None"
    assert "Nanny" not in done.stderr and "LocalCluster" not in done.stderr
