"""Every number of a small study and of the API's calls, as digests of their bytes, printed as JSON.

``tests/test_same_bits.py`` runs this script in fresh processes under settings that change which kernels
the libraries pick at run time (OpenBLAS's core type, numpy's SIMD targets, numba's target CPU, glibc's
libm variants) and compares what they print. Usage: ``python tests/same_bits_run.py WORKDIR``.

The data are generated from integers (no library's floating-point kernel makes them): three languages of
2,400 words with the words of every shipped test among them, ingested as a user would. Then one study
(every test family and association, three weightings, placebo pairs, intervals, adjusted p-values) and
the API calls beside it (tests in this process, set metrics, directions, debiasing, alignment,
frequency profiles, grammatical gender, meta-analyses, attribute sensitivity, the internal consistency of
base pairs over a vocabulary).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

import biasdask
from biasdask import lexicon
from biasdask.engine import grammatical
from biasdask.engine.ingest import ingest
from biasdask.io import results as rs

LANGUAGES = ("en", "de", "es")
N_WORDS, DIM, SEED = 2400, 50, 20260521


def digest(value) -> str:
    """SHA-256 (first 16 hex digits) of a value's type, shape and bytes."""
    h = hashlib.sha256()
    if isinstance(value, (xr.DataArray, xr.Variable)):
        value = value.values
    if isinstance(value, np.ndarray) and value.dtype.kind in "OUS":
        value = [str(v) for v in value.ravel()] + [str(value.shape)]
    if isinstance(value, np.ndarray):
        arr = np.ascontiguousarray(value)
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(arr.tobytes())
    elif isinstance(value, (float, np.floating)):
        h.update(float(value).hex().encode())
    else:
        h.update(repr(value).encode())
    return h.hexdigest()[:16]


def record(out: dict, name: str, value) -> None:
    """Digests of ``value`` under ``name``: a dataset by variable, a result object by field."""
    if isinstance(value, xr.Dataset):
        for var in sorted(map(str, value.variables)):
            out[f"{name}.{var}"] = digest(value[var])
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            record(out, f"{name}.{field.name}", getattr(value, field.name))
    elif isinstance(value, (list, tuple)) and value and not isinstance(value[0], str):
        for i, item in enumerate(value):
            record(out, f"{name}[{i}]", item)
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            record(out, f"{name}.{key}", value[key])
    else:
        out[name] = digest(np.asarray(value) if isinstance(value, (list, tuple)) else value)


def vocabulary(code: str) -> list[str]:
    """The words of every shipped test that applies to ``code``, then filler words, in a fixed order."""
    words: dict[str, None] = {}
    table = lexicon.languages().set_index("code")
    words.update(dict.fromkeys([table.loc[code, "male"], table.loc[code, "female"]]))
    for entry in lexicon.iat_words("cc", code):
        words.update(dict.fromkeys(entry.tokens))
    for i in range(1, 11):
        sets = lexicon.weat_test(i) if code == "en" else lexicon.xweat_test(code, i)
        words.update(dict.fromkeys(sets.x + sets.y + sets.a + sets.b))
    if code == "en":
        b = lexicon.bolukbasi()
        words.update(dict.fromkeys(w for pair in b.definitional_pairs + b.equalize_pairs for w in pair))
        words.update(dict.fromkeys(p.word for p in b.professions[:40]))
        c = lexicon.context_words()
        words.update(dict.fromkeys(c.female + c.male))
    listed = [w for w in words if " " not in w]
    return listed + [f"{code}{i:05d}" for i in range(N_WORDS - len(listed))]


def write_language(path: Path, code: str, index: int) -> list[str]:
    """A word2vec binary file: integer noise in thousandths, a planted gender and career/family lean."""
    words = vocabulary(code)
    rng = np.random.default_rng([SEED, index])
    ints = rng.integers(-1000, 1001, size=(len(words), DIM))
    lean = rng.integers(-1, 2, size=DIM) * 300
    gendered = {
        e.tokens[0]: 1 if e.category == "male" else -1
        for e in lexicon.iat_words("cc", code)
        if e.category in ("male", "female")
    }
    table = lexicon.languages().set_index("code")
    gendered[table.loc[code, "male"]], gendered[table.loc[code, "female"]] = 1, -1
    for row, word in enumerate(words):
        ints[row] += gendered.get(word, 0) * lean
    ints[:, 0] += np.arange(len(words))[::-1] // 4  # the norm falls with rank, as in real embeddings
    vectors = (ints / 1000).astype("<f4")
    body = b"".join(w.encode() + b" " + v.tobytes() for w, v in zip(words, vectors))
    path.write_bytes(f"{len(words)} {DIM}\n".encode() + body)
    return words


def study(work: Path, stores: dict[str, str], out: dict) -> str:
    config = {
        "output": str(work / "study.zarr"),
        "languages": {code: {"store": url} for code, url in stores.items()},
        "methods": ["uniform", "zipf", "frequency"],
        "associations": ["cosine", "euclidean", "ripa", "semaxis"],
        "attributes": "iat",
        "tests": ["gender", "weat7", "xweat7", "career_family", "rnd", "rnsb", "mac", "ect", "nas"],
        "n_permutations": 199,
        "placebo": {"n": 30},
        "ci_level": 0.9,
        "seed": SEED,
    }
    biasdask.run(config, progress=False)
    cube = rs.open_results(config["output"]).load()
    # the identity of the stores read is no number of the study: the fingerprint hashes the compressed
    # chunks' checksums, the source names a file of the work directory
    record(out, "study.cube", cube.drop_attrs().drop_vars(["store_fingerprint", "store_source"]))
    for lang in cube["language"].values:
        for method in cube["method"].values:
            for test in cube["test"].values:
                try:
                    null = rs.read_null(config["output"], str(lang), str(method), str(test))
                except biasdask.errors.IncompleteStoreError:
                    continue
                out[f"study.null.{lang}.{method}.{test}"] = digest(null)
        record(out, f"study.scores.{lang}", rs.open_scores(config["output"], language=str(lang)).load().drop_attrs())
    return config["output"]


def api(work: Path, stores: dict[str, str], words: dict[str, list[str]], cube: str, out: dict) -> None:
    en, de, es = (stores[c] for c in LANGUAGES)
    resampling = biasdask.Resampling(n_permutations=299, seed=SEED, placebo=30)
    iat_a, iat_b = lexicon.iat_attribute_terms("cc", "en")
    a = [t.label for t in iat_a if t.label in words["en"]]
    b = [t.label for t in iat_b if t.label in words["en"]]
    for association in ("cosine", "euclidean", "ripa"):
        res = biasdask.full_vocabulary_test(
            en, a, b, method="zipf", resampling=resampling, association=association, return_null=True
        )
        record(out, f"full_vocabulary_test.{association}", res)
    record(
        out,
        "full_vocabulary_test.pairwise",
        biasdask.pairwise_vocabulary_test(
            en,
            de,
            a,
            b,
            other_a=["männlich"],
            other_b=["weiblich"],
            vocabulary=biasdask.Vocabulary(max_words=800),
            resampling=biasdask.Resampling(n_permutations=299, seed=SEED),
        ),
    )
    record(out, "scores", biasdask.scores(en, a, b, methods=("uniform", "zipf", "frequency"), association="semaxis"))
    record(
        out,
        "permutation_test",
        biasdask.permutation_test(np.arange(40) / 7.0, np.arange(33) / 5.0, resampling=resampling, return_null=True),
    )
    record(out, "weat.euclidean", biasdask.weat(en, test="weat7", similarity="euclidean", resampling=resampling))
    targets, attributes = lexicon.xweat_test("de", 7), lexicon.xweat_test("es", 7)
    sets = dataclasses.replace(targets, a=attributes.a, b=attributes.b)
    record(out, "weat.crosslingual", biasdask.weat(de, sets, attributes_from=es, resampling=resampling))
    record(out, "career_family_test", biasdask.career_family_test(es, language="es", resampling=resampling))
    for metric in ("rnd", "rnsb", "mac", "ect", "nas"):
        record(
            out,
            f"set_metric_test.{metric}",
            biasdask.set_metric_test(en, test="weat7", metric=metric, resampling=resampling),
        )
    pairs = [p for p in lexicon.bolukbasi().definitional_pairs if all(w in words["en"] for w in p)]
    g = {}
    for method in ("pca", "sum", "pair"):
        g[method] = biasdask.direction(en, pairs[:1] if method == "pair" else pairs, algorithm=method)
        out[f"direction.{method}"] = digest(g[method])
    professions = [p.word for p in lexicon.bolukbasi().professions[:40] if p.word in words["en"]]
    out["direct_bias"] = digest(biasdask.direct_bias(en, g["pca"], professions, c=0.8))
    out["indirect_bias"] = digest(biasdask.indirect_bias(en, g["pca"], professions[0], professions[1]))
    for method in ("hard", "project"):
        record(
            out, f"debias.{method}", biasdask.debias(en, str(work / f"debias-{method}.zarr"), algorithm=method).load()
        )
    dictionary = list(zip(words["de"][200:600], words["es"][200:600]))
    record(out, "align", biasdask.align(de, es, dictionary, str(work / "aligned.zarr")).load())
    record(out, "frequency_profile.rank", biasdask.frequency_profile(rs.open_scores(cube, language="en"), bins=0.5))
    record(
        out,
        "frequency_profile.frequency",
        biasdask.frequency_profile(rs.open_scores(cube, language="de"), by="frequency", language="de"),
    )
    forms = grammatical.iat_gender_forms("es")
    record(out, "bad_test", grammatical.bad_test(es, forms.targets, forms.attributes))
    record(out, "mweat_test", grammatical.mweat_test(es, forms.targets, forms.male, forms.female))
    results = rs.open_results(cube)
    covariate = {"en": 1.0, "de": 2.5, "es": 4.0}
    for estimator, hk in (("DL", False), ("REML", True), ("PM", False)):
        for test in ("gender", "gender.euclidean"):
            record(
                out,
                f"meta_analysis.{estimator}.{test}",
                biasdask.meta_analysis(results, test=test, method="zipf", estimator=estimator, hartung_knapp=hk),
            )
        record(
            out,
            f"meta_analysis.{estimator}.regression",
            biasdask.meta_analysis(
                results,
                test="gender.ripa",
                method="uniform",
                estimator=estimator,
                hartung_knapp=hk,
                covariate=covariate,
            ),
        )
    pairs = [(m, f) for f, m in lexicon.bolukbasi().definitional_pairs if f in words["en"] and m in words["en"]]
    for association in ("cosine", "ripa", "euclidean"):
        found = biasdask.pair_consistency(en, pairs, seed=SEED, association=association)
        record(out, f"pair_consistency.{association}", found)
    record(
        out,
        "attribute_sensitivity",
        biasdask.attribute_sensitivity(
            en, a, b, resampling=biasdask.Resampling(n_permutations=99, seed=SEED), progress=False
        ),
    )


def main(work: Path) -> dict[str, str]:
    warnings.simplefilter("ignore")
    out: dict[str, str] = {}
    stores, words = {}, {}
    for i, code in enumerate(LANGUAGES):
        words[code] = write_language(work / f"{code}.bin", code, i)
        stores[code] = str(work / f"{code}.zarr")
        record(out, f"store.{code}", ingest(str(work / f"{code}.bin"), stores[code], language=code, progress=False))
    t = time.perf_counter()
    cube = study(work, stores, out)
    print(f"study {time.perf_counter() - t:.1f} s", file=sys.stderr)
    t = time.perf_counter()
    api(work, stores, words, cube, out)
    print(f"api {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return out


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1])), indent=1, sort_keys=True))
