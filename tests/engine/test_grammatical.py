"""The BAD test and MWEAT on stores (biasdask.engine.grammatical).

Stores are ingested from small ``.vec`` files (tests/stores.py); every oracle reads the same file with numpy
(fields split on b" ") and computes with the stats-level functions, scipy, or a plain Python loop.
"""

from __future__ import annotations

import math
import warnings

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy import stats  # noqa: E402

from biasdask import plot  # noqa: E402
from biasdask.engine import grammatical as eg  # noqa: E402
from biasdask.engine import words as ew  # noqa: E402
from biasdask.engine.ingest import ingest  # noqa: E402
from biasdask.errors import MissingWordsError  # noqa: E402
from biasdask.study.cells import cell_values  # noqa: E402
from tests.stores import make_store, read_text_vectors, unit  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------------------------------
# Grammatical gender


@pytest.fixture(scope="module")
def spanish(shared_data, tmp_path_factory):
    vec = shared_data / "iat" / "cc" / "es.vec"
    dest = tmp_path_factory.mktemp("es") / "es.zarr"
    ingest(str(vec), str(dest), language="es", client=False, progress=False)
    return str(dest), read_text_vectors(vec)


def test_iat_gender_forms_for_spanish():
    forms = eg.iat_gender_forms("es")
    assert ("ejecutivo", "ejecutiva") in forms.targets and ("hijos", "hijas") in forms.targets
    assert ("primos", "primas") in forms.targets and ("niños", "niñas") in forms.targets
    assert ("salario", "salario") in forms.targets  # unmarked: the same form on both sides
    assert len(forms.targets) == len(set(forms.targets)) == 22
    assert forms.ambiguous == ("su",)  # his and her
    assert forms.attributes == (
        ("hombre", "mujer"),
        ("niño", "niña"),
        ("hermano", "hermana"),
        ("él", "ella"),
        ("hijo", "hija"),
    )
    assert "su" not in forms.male + forms.female and "suyo" in forms.female
    assert forms.unpaired == ()
    assert eg.iat_gender_forms("de").unpaired == ("family:cousins:t2",)


def test_bad_and_mweat_on_spanish_iat_forms_match_scipy(spanish):
    url, vecs = spanish
    forms = eg.iat_gender_forms("es")
    bad = eg.bad_test(url, forms.targets, forms.attributes)
    assert bad.test == "bad" and bad.language == "es" and bad.dropped == ()
    assert bad.targets == forms.targets and len(bad.masculine) == len(bad.feminine) == 22
    assert bad.a == ("hombre", "niño", "hermano", "él", "hijo")
    assert bad.b == ("mujer", "niña", "hermana", "ella", "hija")

    def assoc(word, group):  # the BAD study eq. 5, by hand
        w = unit(vecs[word])
        return float(np.mean([w @ unit(vecs[g]) for g in group]))

    masc = [assoc(m, bad.a) for m, _ in forms.targets]
    fem = [assoc(f, bad.b) for _, f in forms.targets]
    np.testing.assert_allclose(bad.masculine, masc, rtol=1e-12)
    np.testing.assert_allclose(bad.feminine, fem, rtol=1e-12)
    assert bad.statistic == pytest.approx(sum(masc) - sum(fem), rel=1e-12)
    oracle = stats.ttest_rel(masc, fem)
    assert bad.t_statistic == pytest.approx(oracle.statistic, rel=1e-10)
    assert bad.p_value == pytest.approx(oracle.pvalue, rel=1e-10)
    diff = np.subtract(masc, fem)
    assert bad.effect_size == pytest.approx(diff.mean() / diff.std(ddof=1), rel=1e-10)

    mweat = eg.mweat_test(url, forms.targets, forms.male, forms.female)
    masc = [assoc(m, forms.male) - assoc(m, forms.female) for m, _ in forms.targets]
    fem = [assoc(f, forms.male) - assoc(f, forms.female) for _, f in forms.targets]
    np.testing.assert_allclose(mweat.masculine, masc, rtol=1e-12, atol=1e-15)
    assert mweat.statistic == pytest.approx(abs(abs(sum(masc)) - abs(sum(fem))), rel=1e-12)
    oracle = stats.ttest_rel(masc, fem)
    assert mweat.t_statistic == pytest.approx(oracle.statistic, rel=1e-10)
    assert mweat.p_value == pytest.approx(oracle.pvalue, rel=1e-10)
    assert "ejecutivo/ejecutiva" in mweat.target_labels and "salario" in mweat.target_labels
    cell = cell_values(mweat)
    assert cell["p_value"] == mweat.p_value and cell["n_x"] == 22 and cell["n_a"] == 5 and cell["n_b"] == 6
    assert math.isnan(cell["z_score"]) and cell["n_permutations"] == -1


_ATTRIBUTES = [("hombre", "mujer"), ("él", "ella"), ("niño", "niña"), ("hermano", "hermana"), ("padre", "madre")]


def _gender_store(tmp_path, name, kind, seed, drop=()):
    """XWEAT's Spanish occupation/adjective forms (the 50 pairs with two distinct forms) and five
    attribute pairs: male attributes near an axis m, female ones their mirror images under the reflection
    R that swaps m and an orthogonal axis f (so s(Rv, B) = s(v, A)). Targets, by ``kind``:

    - ``"bad"``: masculine = base + 0.8 m, feminine = base + 0.2 f (+ noise): a masculine BAD bias;
    - ``"mweat"``: masculine = base + 0.6 m, feminine = base + 0.6 f: each form leans to its own gender;
    - ``"bad-none"``: pairs in couples (v1, R v2), (v2, R v1): BAD differences d and -d, no bias;
    - ``"mweat-none"``: couples (v1, v2), (v2, v1): MWEAT differences d and -d, no bias.
    """
    rng = np.random.default_rng(seed)
    dim = 24
    m_axis, f_axis = np.linalg.qr(rng.normal(size=(dim, 2)))[0].T
    h = unit(m_axis - f_axis)
    reflect = np.eye(dim) - 2 * np.outer(h, h)
    pairs = [p for p in eg.xweat_gender_pairs("es") if p[0] != p[1]]
    rows = {}
    for m, f in _ATTRIBUTES:
        rows[m] = m_axis + rng.normal(scale=0.3, size=dim)
        rows[f] = reflect @ rows[m]
    for (m1, f1), (m2, f2) in zip(pairs[::2], pairs[1::2]):
        base = rng.normal(scale=0.5, size=dim)
        v1, v2 = (base + rng.normal(scale=0.15, size=dim) for _ in range(2))
        if kind == "bad":
            rows.update({m1: v1 + 0.8 * m_axis, f1: v2 + 0.2 * f_axis, m2: v2 + 0.8 * m_axis, f2: v1 + 0.2 * f_axis})
        elif kind == "mweat":
            rows.update({m1: v1 + 0.6 * m_axis, f1: v2 + 0.6 * f_axis, m2: v2 + 0.6 * m_axis, f2: v1 + 0.6 * f_axis})
        elif kind == "bad-none":
            rows.update({m1: v1, f1: reflect @ v2, m2: v2, f2: reflect @ v1})
        else:
            rows.update({m1: v1, f1: v2, m2: v2, f2: v1})
    words = [w for w in rows if w not in drop]
    url = make_store(tmp_path, name, words, np.array([rows[w] for w in words]), language="es", chunk_words=32)
    return url, pairs


def test_xweat_gender_pairs():
    pairs = eg.xweat_gender_pairs("es")
    assert ("ingeniero", "ingeniera") in pairs and ("enfermero", "enfermera") in pairs
    assert ("terapeuta", "terapeuta") in pairs
    assert len(pairs) == len(set(pairs))
    assert eg.xweat_gender_pairs("es", ["engineer", "nurse", "no-such-word"]) == (
        ("ingeniero", "ingeniera"),
        ("enfermero", "enfermera"),
    )


def test_planted_gender_bias_is_significant_and_none_is_not(tmp_path):
    male, female = [m for m, _ in _ATTRIBUTES], [f for _, f in _ATTRIBUTES]
    url, pairs = _gender_store(tmp_path, "bad_planted", "bad", seed=1)
    res = eg.bad_test(url, pairs, _ATTRIBUTES)
    assert len(res.targets) == len(pairs) == 50
    assert res.statistic > 0 and res.t_statistic > 0 and res.p_value < 1e-6 and res.effect_size > 0.5
    url, pairs = _gender_store(tmp_path, "bad_none", "bad-none", seed=2)
    res = eg.bad_test(url, pairs, _ATTRIBUTES)
    assert abs(res.statistic) < 1e-4 and abs(res.t_statistic) < 0.01 and res.p_value > 0.99
    assert res.bias.std() > 0.01  # the targets do differ, only not on average

    url, pairs = _gender_store(tmp_path, "mweat_planted", "mweat", seed=3)
    res = eg.mweat_test(url, pairs, male, female)
    assert res.t_statistic > 0 and res.p_value < 1e-6 and res.masculine.mean() > 0 > res.feminine.mean()
    url, pairs = _gender_store(tmp_path, "mweat_none", "mweat-none", seed=4)
    res = eg.mweat_test(url, pairs, male, female)
    assert res.statistic < 1e-12 and abs(res.t_statistic) < 1e-6 and res.p_value > 0.99
    assert res.bias.std() > 0.01


@pytest.mark.filterwarnings("ignore::biasdask.engine.words.MissingWordsWarning")
def test_gender_tests_drop_pairs_with_missing_forms(tmp_path):
    url, pairs = _gender_store(tmp_path, "holes", "bad", seed=5, drop=("ingeniera", "madre", "niño"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = eg.bad_test(url, pairs, _ATTRIBUTES)
    messages = " ".join(str(w.message) for w in caught if issubclass(w.category, ew.MissingWordsWarning))
    assert "ingeniero/ingeniera" in messages and "padre/madre" in messages and "niño/niña" in messages
    assert set(res.dropped) == {"ingeniero/ingeniera", "padre/madre", "niño/niña"}
    assert ("ingeniero", "ingeniera") not in res.targets and len(res.targets) == len(pairs) - 1
    assert res.a == ("hombre", "él", "hermano") and res.b == ("mujer", "ella", "hermana")
    with pytest.warns(ew.MissingWordsWarning, match="attributes A.*niño"):
        res = eg.mweat_test(url, pairs, [m for m, _ in _ATTRIBUTES], [f for _, f in _ATTRIBUTES])
    assert "niño" not in res.a and "niña" in res.b
    with pytest.raises(MissingWordsError, match="need 1"):
        eg.bad_test(url, pairs, [("niño", "niña"), ("padre", "madre")])
    with pytest.raises(MissingWordsError, match="need 2"):
        eg.bad_test(url, pairs[:1], _ATTRIBUTES)
    with pytest.raises(MissingWordsError, match="attributes B"):
        eg.mweat_test(url, pairs, ["hombre"], ["madre"])


def test_gender_form_bias_plot(spanish, tmp_path):
    url, _ = spanish
    forms = eg.iat_gender_forms("es")
    results = {
        "es · BAD": eg.bad_test(url, forms.targets, forms.attributes),
        "es · MWEAT": eg.mweat_test(url, forms.targets, forms.male, forms.female),
    }
    fig = plot.plot_gender_form_bias(results)
    path = tmp_path / "forms.png"
    fig.savefig(path, dpi=60)
    assert path.read_bytes().startswith(PNG_MAGIC)
    bad_ax, mweat_ax = fig.axes[:2]
    bad = results["es · BAD"]
    assert bad_ax.get_title() == (
        f"es · BAD  (22 targets)\npaired t = {bad.t_statistic:.3g}, p = {bad.p_value:.2g}; "
        f"BAD statistic = {bad.statistic:.3g}"
    )
    assert bad_ax.get_xlabel().startswith("BAD bias s(x, A) − s(y, B)")
    ticks = [t.get_text() for t in bad_ax.get_yticklabels()]
    assert sorted(ticks) == sorted(results["es · BAD"].target_labels)
    # Sorted from lowest to highest, bottom to top.
    widths = [p.get_width() for p in bad_ax.patches]
    assert widths == sorted(widths)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["masculine form scores higher", "feminine form scores higher"]
    assert mweat_ax.get_xlabel().startswith("s(x, A, B) − s(y, A, B)")
