"""The notebooks run end to end in a fresh Jupyter kernel (the JupyterHub path).

Each notebook is executed with nbclient in a temporary working directory, on small settings passed through
its environment variables, with a probe cell appended that prints the notebook's results as JSON. The
numbers are checked against independent computations from the raw embedding files (gensim for the demo's
word2vec files, plain numpy for ``.vec`` text) and, on the real fastText vectors, against Lewis & Lupyan's
published effect size.
"""

from __future__ import annotations

import json
import math
import time
from datetime import datetime
from pathlib import Path

import nbformat
import numpy as np
import pytest
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell
from scipy.stats import spearmanr

from biasdask import Location

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
KERNEL = "biasdask-test-python"
CELL_TIMEOUT = 180
PROBE_MARK = "BIASDASK-PROBE "
N_PERMUTATIONS = 999
# Every setting a notebook reads; each test sets the ones it needs and clears the others.
NOTEBOOK_ENV = (
    "BIASDASK_QUICKSTART_VEC",
    "BIASDASK_NB_PERMUTATIONS",
    "BIASDASK_NB_WORDS",
    "BIASDASK_NB_WORKDIR",
    "BIASDASK_STORES",
    "BIASDASK_RESULTS",
    "BIASDASK_LANGUAGES",
    "DASK_SCHEDULER_ADDRESS",
    "DASK_GATEWAY__ADDRESS",
)

QUICKSTART_PROBE = """
import json, shutil
def _r(r):
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in vars(r).items() if k != "null_distribution"}
if Path(VEC).parent == Path(WORKDIR.name):  # the notebook's own file goes away with its directory: keep a copy
    shutil.copy(VEC, "probe-copy.vec")
print("BIASDASK-PROBE " + json.dumps({
    "vec": str(VEC),
    "workdir": WORKDIR.name,
    "in_memory": {"weat": {k: float(getattr(iat_in_memory, k)) for k in ("effect_size", "p_value", "statistic")},
                  "full": _r(vocabulary_in_memory)},
    "n_words": int(emb.sizes["word"]),
    "top_male": words.nlargest(5, "u").index.tolist(),
    "top_female": words.nsmallest(5, "u").index.tolist(),
    "full": {m: _r(r) for m, r in full.items()},
    "iat": _r(res),
    "weat": {"effect_size": float(same.effect_size), "p_value": float(same.p_value), "statistic": float(same.statistic)},
}))
"""

MULTILINGUAL_PROBE = """
import json
print("BIASDASK-PROBE " + json.dumps({
    "results": str(RESULTS),
    "stores": str(STORES),
    "languages": [str(x) for x in table.index],
    "columns": [str(c) for c in table.columns],
    "effect_size": {m: ds["effect_size"].sel({"test": "gender", "method": m}).to_series().to_dict()
                    for m in ["uniform", "zipf"]},
    "statistic": {m: ds["statistic"].sel({"test": "gender", "method": m}).to_series().to_dict()
                  for m in ["uniform", "zipf"]},
    "p_value": ds["p_value"].values.ravel().tolist(),
    "n_permutations": sorted(set(ds["n_permutations"].values.ravel().tolist())),
    "rho": None if planted is None else float(rho),
    "planted": None if planted is None else planted.to_dict(),
}))
"""


@pytest.fixture(scope="session")
def kernel_spec_manager(tmp_path_factory) -> KernelSpecManager:
    """A kernelspec that runs this very interpreter (so the kernel imports the biasdask under test)."""
    from ipykernel.kernelspec import write_kernel_spec

    root = tmp_path_factory.mktemp("kernels")
    write_kernel_spec(root / KERNEL)
    return KernelSpecManager(kernel_dirs=[str(root)])


def execute(
    name: str, cwd: Path, ksm: KernelSpecManager, probe: str, before: str | None = None, probe_before: str = "cleanup"
) -> tuple[nbformat.NotebookNode, dict, float]:
    """Run ``notebooks/<name>`` (up to the cell tagged ``before``, if given) with ``probe`` inserted before the
    cell tagged ``probe_before`` (the clean-up cell, which still runs) or appended.

    Returns the executed notebook, the JSON the probe printed and the seconds it took.
    """
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    if before is not None:
        nb.cells = nb.cells[: nb.cells.index(tagged(nb, before))]
    probe_cell = new_code_cell(probe)
    later = [c for c in nb.cells if probe_before in c.metadata.get("tags", [])]
    nb.cells.insert(nb.cells.index(later[0]) if later else len(nb.cells), probe_cell)
    km = KernelManager(kernel_name=KERNEL, kernel_spec_manager=ksm)
    client = NotebookClient(
        nb, km=km, timeout=CELL_TIMEOUT, startup_timeout=120, resources={"metadata": {"path": str(cwd)}}
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    print(
        f"{name}: {seconds:.1f} s; slowest cells: "
        + ", ".join(
            f"#{i} {t:.1f} s"
            for t, i in sorted(((cell_seconds(c), i) for i, c in enumerate(nb.cells)), reverse=True)[:4]
        )
    )
    text = "".join(o.get("text", "") for o in probe_cell.outputs if o.output_type == "stream")
    line = next(ln for ln in text.splitlines() if ln.startswith(PROBE_MARK))
    return nb, json.loads(line[len(PROBE_MARK) :]), seconds


def cell_seconds(cell: nbformat.NotebookNode) -> float:
    """Execution time of a cell, from the timestamps nbclient records."""
    timing = cell.metadata.get("execution", {})
    if "iopub.execute_input" not in timing or "shell.execute_reply" not in timing:
        return 0.0
    start, end = (datetime.fromisoformat(timing[k]) for k in ("iopub.execute_input", "shell.execute_reply"))
    return (end - start).total_seconds()


def tagged(nb: nbformat.NotebookNode, tag: str) -> nbformat.NotebookNode:
    (cell,) = [c for c in nb.cells if tag in c.metadata.get("tags", [])]
    return cell


def output_types(cell: nbformat.NotebookNode) -> set[str]:
    kinds = set()
    for out in cell.outputs:
        kinds |= set(out.get("data", {})) if "data" in out else {out.output_type}
    return kinds


def stream_text(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


@pytest.fixture()
def notebook_env(monkeypatch):
    """Clear every notebook setting (and cluster address) so each test sets exactly what it means."""
    for key in NOTEBOOK_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("BIASDASK_NB_PERMUTATIONS", str(N_PERMUTATIONS))
    return monkeypatch


def read_vec(path: Path) -> tuple[list[str], np.ndarray]:
    """A small ``.vec`` file, read independently of biasdask (fields split on single spaces only)."""
    lines = path.read_bytes().split(b"\n")
    n, dim = map(int, lines[0].split(b" "))
    words, rows = [], []
    for line in lines[1 : n + 1]:
        fields = line.rstrip(b" ").split(b" ")
        words.append(fields[0].decode("utf-8"))
        rows.append(np.array(fields[1:], dtype=np.float64))
    vectors = np.array(rows)
    assert vectors.shape == (n, dim)
    return words, vectors


def full_vocabulary_oracle(words: list[str], vectors: np.ndarray, a: list[str], b: list[str]) -> dict:
    """s (uniform and zipf) and d of the full-vocabulary test, by brute force: every cosine, one word at a time."""
    index = {w: i for i, w in enumerate(words)}
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    u = np.array(
        [
            np.mean([unit[i] @ unit[index[w]] for w in a]) - np.mean([unit[i] @ unit[index[w]] for w in b])
            for i in range(len(words))
        ]
    )
    n = len(words)
    harmonic = sum(1.0 / k for k in range(1, n + 1))
    zipf = (1.0 / np.arange(1, n + 1)) / harmonic
    d = u.mean() / np.concatenate([u, np.zeros(n)]).std(ddof=1)
    return {"u": dict(zip(words, u)), "uniform": u.sum(), "zipf": (zipf * u).sum(), "d": d}


def check_quickstart(nb, probe: dict, vec: Path) -> None:
    """Checks common to both inputs: the numbers against a brute-force oracle of ``vec``, the outputs shown."""
    words, vectors = read_vec(vec)
    assert probe["n_words"] == len(words)
    oracle = full_vocabulary_oracle(words, vectors, ["male", "man", "he"], ["female", "woman", "she"])
    top_by_u = sorted(oracle["u"], key=oracle["u"].get)
    assert probe["top_male"] == top_by_u[::-1][:5]
    assert probe["top_female"] == top_by_u[:5]
    for method in ("uniform", "zipf"):
        r = probe["full"][method]
        assert r["statistic"] == pytest.approx(oracle[method], rel=1e-4)
        assert r["effect_size"] == pytest.approx(oracle["d"], rel=1e-4)  # the same d for both weightings
        assert r["n_permutations"] == N_PERMUTATIONS and not r["exact"]
        assert r["n_x"] == r["n_y"] == len(words)
        assert 1 / (N_PERMUTATIONS + 1) <= r["p_value"] <= 1
        assert math.isfinite(r["z_score"])
    iat = probe["iat"]
    # 8 + 8 words: all C(16, 8) splits enumerated, as the notebook says
    assert iat["exact"] and iat["n_permutations"] == math.comb(16, 8) and iat["n_x"] == iat["n_y"] == 8
    assert 0 < iat["p_value"] <= 1
    assert probe["weat"]["effect_size"] == pytest.approx(iat["effect_size"], rel=1e-5)
    assert probe["weat"]["p_value"] == pytest.approx(iat["p_value"], rel=1e-9)

    result = tagged(nb, "result")
    assert "p-value = " in stream_text(result) and "exact, all 12,870 splits" in stream_text(result)
    assert "image/png" in output_types(result)
    assert "image/png" in output_types(tagged(nb, "null-plot"))
    assert "text/html" in output_types(tagged(nb, "top-words"))
    assert "text/html" in output_types(tagged(nb, "full-vocabulary"))


@pytest.mark.slow
def test_quickstart(request, dask_client, tmp_path, notebook_env, kernel_spec_manager):
    """End to end on fastText Common Crawl English (the IAT words) when the shared data is there, else on the
    notebook's own file.

    The kernel reaches the session's cluster through ``DASK_SCHEDULER_ADDRESS`` (the DaskJob path of
    ``get_client``) and leaves it running when the notebook closes its client.
    """
    import pandas as pd

    try:
        real = request.getfixturevalue("shared_data") / "iat" / "cc" / "en.vec"
    except pytest.skip.Exception:
        real = None
    if real is not None:
        notebook_env.setenv("BIASDASK_QUICKSTART_VEC", str(real))
    address = dask_client.scheduler.address
    notebook_env.setenv("DASK_SCHEDULER_ADDRESS", address)
    nb, probe, _ = execute("quickstart.ipynb", tmp_path, kernel_spec_manager, QUICKSTART_PROBE)
    assert address in tagged(nb, "client").outputs[0]["data"]["text/plain"]
    assert dask_client.status == "running" and len(dask_client.scheduler_info()["workers"]) == 2

    vec = real if real is not None else tmp_path / "probe-copy.vec"
    assert Path(probe["vec"]) == (real if real is not None else Path(probe["workdir"]) / "quickstart-sample.vec")
    check_quickstart(nb, probe, vec)
    # nothing left behind but the report the notebook asks the reader to open (and the probe's copy)
    kept = ["biasdask-quickstart-report"] + ([] if real is not None else ["probe-copy.vec"])
    assert sorted(p.name for p in tmp_path.iterdir()) == kept
    assert (tmp_path / "biasdask-quickstart-report" / "index.html").stat().st_size > 10_000
    assert not Path(probe["workdir"]).exists()
    # no warning about missing notebook widgets (tqdm's "IProgress not found") in any output
    assert not [o for c in nb.cells for o in c.get("outputs", []) if "IProgress" in o.get("text", "")]
    # the in-memory path (a gensim KeyedVectors, no client yet) found the planted career/family bias
    in_memory = probe["in_memory"]
    assert in_memory["weat"]["effect_size"] > 1 and in_memory["weat"]["p_value"] < 0.01
    assert in_memory["full"]["n_x"] > 5000 and in_memory["full"]["n_permutations"] == N_PERMUTATIONS
    if real is None:  # the same vectors in memory and in the store: the same bits
        assert in_memory["full"]["statistic"] == probe["full"]["zipf"]["statistic"]
        assert in_memory["full"]["p_value"] == probe["full"]["zipf"]["p_value"]
        assert in_memory["weat"]["statistic"] == pytest.approx(probe["weat"]["statistic"], rel=1e-12)
    if real is not None:
        published = pd.read_csv(real.parents[1] / "published_effect_sizes.csv").set_index("language_code")
        assert probe["iat"]["effect_size"] == pytest.approx(published.loc["en", "lang_es_wiki_cc"], abs=1e-4)
        assert set(probe["top_male"][:3]) <= {"he", "his", "him", "man"}
        assert set(probe["top_female"][:3]) <= {"she", "her", "woman", "hers"}
    else:  # male words were planted towards career, female words towards family
        assert probe["iat"]["effect_size"] > 1 and probe["iat"]["p_value"] < 0.01


def test_quickstart_writes_its_own_file(tmp_path, notebook_env, kernel_spec_manager):
    """Without BIASDASK_QUICKSTART_VEC the notebook writes a frequency-ordered ``.vec`` with the planted bias."""
    import wordfreq

    from biasdask.lexicon import iat_categories

    # (the notebook is cut before its clean-up cell: the probe removes its temporary directory itself)
    probe = (
        'import json, shutil; shutil.copy(VEC, "copy.vec"); WORKDIR.cleanup(); '
        'print("BIASDASK-PROBE " + json.dumps({"vec": VEC}))'
    )
    _, out, _ = execute("quickstart.ipynb", tmp_path, kernel_spec_manager, probe, before="client")
    assert Path(out["vec"]).name == "quickstart-sample.vec" and Path(out["vec"]).parent != tmp_path
    assert not Path(out["vec"]).parent.exists()
    words, vectors = read_vec(tmp_path / "copy.vec")
    iat = iat_categories()
    assert words[:100] == wordfreq.top_n_list("en", 100)
    assert len(set(words)) == len(words) and set().union(*iat.values()) <= set(words)
    unit = dict(zip(words, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)))
    direction = np.mean([unit[w] for w in iat["male"]], axis=0) - np.mean([unit[w] for w in iat["female"]], axis=0)
    lean = {cat: np.mean([unit[w] @ direction for w in ws]) for cat, ws in iat.items()}
    assert lean["male"] > lean["career"] > 0 > lean["family"] > lean["female"]


def demo_oracle(path: Path, male: str, female: str) -> dict:
    """s (uniform, zipf) of one generated language, from gensim's reading of its word2vec file."""
    from gensim.models import KeyedVectors

    kv = KeyedVectors.load_word2vec_format(str(path), binary=True)
    vectors = kv.vectors.astype(np.float64)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    u = unit @ unit[kv.key_to_index[male]] - unit @ unit[kv.key_to_index[female]]
    n = len(u)
    zipf = (1.0 / np.arange(1, n + 1)) / np.sum(1.0 / np.arange(1, n + 1))
    return {"uniform": u.sum(), "zipf": (zipf * u).sum(), "n": n}


@pytest.mark.slow
def test_multilingual_on_demo_data(dask_client, tmp_path, notebook_env, kernel_spec_manager):
    """The study on small demo data of eight languages (the notebook's 26 by default; ``biasdask demo``'s
    test runs all 26): eight rows, the planted order recovered, s as gensim computes it."""
    from biasdask.demo import planted_strengths
    from biasdask.lexicon import languages

    catalog = languages().set_index("code")
    codes = ["ar", "zh", "en", "fi", "hi", "ja", "ru", "yo"]  # six families, two scripts of Asia
    work = tmp_path / "work"
    notebook_env.setenv("DASK_SCHEDULER_ADDRESS", dask_client.scheduler.address)
    notebook_env.setenv("BIASDASK_LANGUAGES", ",".join(codes))
    notebook_env.setenv("BIASDASK_NB_WORDS", "2000")
    notebook_env.setenv("BIASDASK_NB_WORKDIR", str(work))
    nb, probe, _ = execute("multilingual.ipynb", tmp_path, kernel_spec_manager, MULTILINGUAL_PROBE)

    assert probe["results"] == str(work / "results.zarr")
    assert sorted(probe["languages"]) == sorted(codes)
    assert sorted(p.name for p in (work / "raw").iterdir()) == sorted(f"{c}.bin" for c in codes)  # no other generated
    assert {"name", "family", "effect_size", "p_value", "planted strength"} <= set(probe["columns"])
    assert probe["n_permutations"] == [N_PERMUTATIONS]
    assert all(1 / (N_PERMUTATIONS + 1) <= p <= 1 for p in probe["p_value"])
    everywhere = planted_strengths(list(catalog.index), seed=7)  # a language keeps its strength among all 26
    assert probe["planted"] == {c: everywhere[c] for c in codes}
    expected_rho = spearmanr([probe["planted"][c] for c in codes], [probe["effect_size"]["uniform"][c] for c in codes])
    assert probe["rho"] == pytest.approx(expected_rho.statistic, abs=1e-12) and probe["rho"] > 0.9
    assert probe["effect_size"]["zipf"] == pytest.approx(probe["effect_size"]["uniform"], rel=1e-12)  # d is on u
    for code in ("en", "zh"):
        oracle = demo_oracle(work / "raw" / f"{code}.bin", catalog.loc[code, "male"], catalog.loc[code, "female"])
        assert oracle["n"] == 2000
        for method in ("uniform", "zipf"):
            assert probe["statistic"][method][code] == pytest.approx(oracle[method], rel=1e-4)

    assert "text/html" in output_types(tagged(nb, "table"))
    assert "image/png" in output_types(tagged(nb, "heatmap"))
    assert f"planted strength: {probe['rho']:.3f}" in stream_text(tagged(nb, "planted-check"))


@pytest.mark.slow
def test_multilingual_on_user_stores_in_s3(dask_client, s3_bucket, tmp_path, notebook_env, kernel_spec_manager):
    """Pointed at the user's stores on S3, nothing is generated; credentials go by reference, never in clear.

    The session's workers were started without the S3 settings in their environment (``dask_client`` is set
    up before ``s3_bucket``, unless another test started S3 first), as Gateway workers would be: the
    notebook's explicit ``storage_options`` carry them.
    """
    import biasdask.demo
    from biasdask.engine.ingest import ingest
    from biasdask.lexicon import languages

    bucket, options = s3_bucket
    catalog = languages().set_index("code")
    raw = {lang.code: lang.path for lang in biasdask.demo.generate(tmp_path / "raw", n_words=600, dim=20, seed=3)}
    ingest(
        Location(str(raw["ja"]), options),
        Location(f"s3://{bucket}/emb/ja.zarr", options),
        language="ja",
        progress=False,
    )
    work = tmp_path / "work"
    notebook_env.setenv("BIASDASK_STORES", f"s3://{bucket}/emb/{{language}}.zarr")
    notebook_env.setenv("BIASDASK_RESULTS", f"s3://{bucket}/results/gender.zarr")
    notebook_env.setenv("BIASDASK_LANGUAGES", "ja")
    notebook_env.setenv("BIASDASK_NB_WORKDIR", str(work))
    notebook_env.setenv("DASK_SCHEDULER_ADDRESS", dask_client.scheduler.address)
    nb, probe, _ = execute("multilingual.ipynb", tmp_path, kernel_spec_manager, MULTILINGUAL_PROBE)

    assert probe["stores"] == f"s3://{bucket}/emb/{{language}}.zarr"
    assert probe["languages"] == ["ja"]
    assert probe["planted"] is None and "planted strength" not in probe["columns"]
    assert not (work / "raw").exists()  # no demo data generated
    oracle = demo_oracle(raw["ja"], catalog.loc["ja", "male"], catalog.loc["ja", "female"])
    for method in ("uniform", "zipf"):
        assert probe["statistic"][method]["ja"] == pytest.approx(oracle[method], rel=1e-4)
    import s3fs

    fs = s3fs.S3FileSystem(**options)
    assert fs.exists(f"{bucket}/results/gender.zarr/zarr.json")
    assert "image/png" in output_types(tagged(nb, "heatmap"))
    study_text = stream_text(tagged(nb, "study"))
    assert "${AWS_ACCESS_KEY_ID}" in study_text and "${AWS_ENDPOINT_URL}" in study_text
    outputs = json.dumps([c.get("outputs", []) for c in nb.cells[:-1]])
    assert options["secret"] not in outputs and options["key"] not in outputs


def test_notebooks_are_stored_clean():
    """Stored without outputs or execution counts (small diffs), valid, and on the standard kernel."""
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        assert nb.metadata["kernelspec"]["name"] == "python3", path.name
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, (path.name, cell.id)
    assert {p.name for p in NOTEBOOKS.glob("*.ipynb")} >= {"quickstart.ipynb", "multilingual.ipynb"}
