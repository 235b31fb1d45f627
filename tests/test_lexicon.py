"""The shipped word lists (biasdask.lexicon) against the reference files they were generated from."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from biasdask import lexicon
from biasdask.errors import BiasdaskError

# --- every file names its source; the API holds together -------------------------------------------


@pytest.mark.parametrize("name", lexicon.DATA_FILES)
def test_each_data_file_names_its_source(name):
    src = lexicon.source(name)
    assert src["paper"].strip() and src["repository"].strip()


def test_available_tests():
    tests = lexicon.available_tests()
    assert [f"weat{i}" for i in range(1, 11)] == [t for t in tests if t.startswith("weat")]
    assert all(tests[f"xweat{i}"] == lexicon.XWEAT_LANGUAGES for i in range(1, 11))
    assert "en" in tests["career_family"] and len(tests["career_family"]) == 34
    assert len(lexicon.iat_languages("cc")) == 31


def test_unknown_names_raise():
    with pytest.raises(BiasdaskError, match="weat11"):
        lexicon.weat_test("weat11")
    with pytest.raises(BiasdaskError, match="'fr'"):
        lexicon.xweat_test("fr", 1)
    with pytest.raises(BiasdaskError, match="'glove'"):
        lexicon.iat_words("glove", "en")
    with pytest.raises(BiasdaskError, match="'xx'"):
        lexicon.iat_words("cc", "xx")


# --- Caliskan WEAT -----------------------------------------------------------------------------

ROLES = {"x": "first_target", "y": "second_target", "a": "first_attribute", "b": "second_attribute"}


def test_weat_lists_match_caliskan_reference(shared_data):
    reference = json.loads((shared_data / "wordlists/caliskan_weat.json").read_text(encoding="utf-8"))
    assert len(reference) == 10
    corrected = {("weat10", "b", "failur"): "failure"}
    for n, ref in enumerate(reference, start=1):
        full = lexicon.weat_test(n, include_removed=True)
        paper = lexicon.weat_test(f"weat{n}")
        removed = []
        for role, key in ROLES.items():
            words = [corrected.get((f"weat{n}", role, w), w) for w in ref[key]["words"]]
            assert list(getattr(full, role)) == words
            assert getattr(full, f"{role}_name") == ref[key]["name"]
            drop = ref[key].get("remove", [])
            assert list(getattr(paper, role)) == [w for w in words if w not in drop]
            removed += drop
        assert list(paper.removed) == removed and full.removed == ()
    assert [len(lexicon.weat_test(3).x), len(lexicon.weat_test(4).y)] == [32, 16]
    assert "failure" in lexicon.weat_test(10).b and "failure" in lexicon.weat_test(5).b


# --- XWEAT -------------------------------------------------------------------------------------


def _xweat_reference(shared_data: Path, lang: str) -> dict[str, tuple[str, ...]]:
    """XWEAT's own reading of vocab_en_XX.csv: (masculine, feminine) from columns 2-3, or 3-4 in Russian."""
    table = {}
    with open(shared_data / f"wordlists/xweat/vocab_en_{lang}.csv", encoding="utf-8", newline="") as f:
        for row in csv.reader(f):
            if not row or not row[0]:
                continue
            cells = [c.strip() for c in row] + ["", "", ""]
            forms = (cells[2], cells[3]) if lang == "ru" and cells[3] else (cells[1], cells[2])
            table[cells[0]] = tuple(x for x in forms if x)
    return table


@pytest.mark.parametrize("lang", lexicon.XWEAT_LANGUAGES)
def test_xweat_translations_match_reference(shared_data, lang):
    assert lexicon.xweat_translations(lang) == _xweat_reference(shared_data, lang)


@pytest.mark.parametrize("lang", lexicon.XWEAT_LANGUAGES)
def test_xweat_tests_follow_xweat_translate(shared_data, lang):
    """XWEAT's translate(): lower-case lookup in a table without capitalised entries, both gender forms,
    untranslatable (capitalised) words kept in English, each form once."""
    table = {en: f for en, f in _xweat_reference(shared_data, lang).items() if not en[0].isupper()}
    english_words = set()
    for n in range(1, 11):
        english = lexicon.weat_test(n, include_removed=True)
        translated = lexicon.xweat_test(lang, n)
        assert translated.test == f"xweat{n}" and translated.language == lang
        for role in ROLES:
            expected = set()
            for w in getattr(english, role):
                english_words.add(w)
                key = {"bluebell": "blue-bell"}.get(w, w).lower()
                expected |= set(table[key]) if key in table else {w}
            got = getattr(translated, role)
            assert set(got) == expected and len(got) == len(expected)
    # every lower-case WEAT word has a translation entry (nothing falls back to English by accident)
    lower = {{"bluebell": "blue-bell"}.get(w, w) for w in english_words if not w[0].isupper()}
    assert lower <= set(table)


def test_xweat_conventions_examples():
    assert lexicon.xweat_translations("de")["educator"] == ("Erzieher", "Erzieherin")
    assert {"математический", "математическая"} <= set(lexicon.xweat_test("ru", 7).x)
    assert lexicon.xweat_translations("hr")["Paul"] == ("Pavle",)
    assert "Paul" in lexicon.xweat_test("hr", 6).x  # names stay English (Lauscher & Glavaš 2019 §2.2)
    assert lexicon.xweat_test("ru", 1).removed == ("rose",)  # no translation in the source
    assert "Glockenblume" in lexicon.xweat_test("de", 1).x  # 'bluebell' is XWEAT's 'blue-bell'


# --- IAT career/family -------------------------------------------------------------------------


def test_iat_words_match_reference(shared_data):
    ref = pd.read_csv(shared_data / "iat/iat_words.csv", keep_default_na=False, dtype=str)
    models = {"subt": "subt", "wiki": "wiki", "wiki_cc": "cc"}
    categories = lexicon.iat_categories()
    assert set(zip(ref.category, ref.word)) == {(c, w) for c, ws in categories.items() for w in ws}
    assert all(len(ws) == 8 for ws in categories.values())
    for source_model, model in models.items():
        rows = ref[ref.model == source_model]
        assert lexicon.iat_languages(model) == tuple(sorted(rows.language.unique()))
        for language, group in rows.groupby("language"):
            expected = Counter(zip(group.category, group.word, group.gender, group.translation_id, group.translation))
            got = Counter(
                (t.category, t.word, t.gender, t.translation_id, token)
                for t in lexicon.iat_words(model, language)
                for token in t.tokens
            )
            assert got == expected, (model, language)
    # literal 'NA' tokens survive (they are in the vectors the published values used)
    assert any("NA" in t.tokens for t in lexicon.iat_words("subt", "ar"))


# --- Bolukbasi ---------------------------------------------------------------------------------


def test_bolukbasi_matches_reference(shared_data):
    ref = json.loads((shared_data / "wordlists/bolukbasi.json").read_text(encoding="utf-8"))["gender"]
    b = lexicon.bolukbasi()
    assert [list(p) for p in b.definitional_pairs] == ref["definitional_pairs"]
    assert [list(p) for p in b.equalize_pairs] == ref["equalize_pairs"]
    assert list(b.gender_specific_seed) == ref["specific_seed"]
    assert list(b.gender_specific_full) == ref["specific_full"]
    assert [list(p) for p in b.professions] == ref["professions"]
    assert len(b.professions) == 320 and len(b.definitional_pairs) == 10


# --- the full-vocabulary study languages, Valentini et al. 2022 context words --------------------------------------------------


def _latex_cell(cell: str) -> str:
    return re.sub(r"\\[a-z]+\{(.*?)\}", r"\1", cell).strip()


def test_languages_match_csv_and_seed_table(shared_data):
    table = lexicon.languages()
    assert list(table.columns) == ["name", "code", "family", "branch", "male", "female"]
    ref = pd.read_csv(shared_data / "languages.csv", dtype=str, keep_default_na=False)
    assert table.values.tolist() == ref[["language", "code", "family", "branch", "male", "female"]].values.tolist()
    assert len(table) == 26 and table.code.is_unique

    seed = next((shared_data.parent / "seeds").glob("000_*.txt"), None)
    if seed is None:
        pytest.skip("the full-vocabulary study's source document not found beside the shared data")
    body = seed.read_text(encoding="utf-8").split(r"\label{table:languages}")[1].split(r"\end{tabular}")[0]
    rows = []
    for line in body.split(r"\\")[1:]:  # after the header row
        cells = [_latex_cell(c) for c in line.replace(r"\hline", "").split("&")]
        if len(cells) == 5:
            rows.append(cells)
    assert rows == table[["name", "family", "branch", "male", "female"]].values.tolist()


def test_context_words_match_valentini_et_al_2022(shared_data):
    words = lexicon.context_words()
    assert len(words.female) == len(words.male) == 8
    seed = next((shared_data.parent / "seeds").glob("003_*.txt"), None)
    if seed is None:
        pytest.skip("the source document of Valentini et al. 2022 not found beside the shared data")
    text = seed.read_text(encoding="utf-8")
    a, b = re.search(r"\$A=\\\{(.*?)\\\}\$ and \$B=\\\{(.*?)\\\}\$", text).groups()
    assert list(words.female) == [w.strip() for w in a.split(",")]
    assert list(words.male) == [w.strip() for w in b.split(",")]
    counts = {w: int(c.replace(",", "")) for w, c in re.findall(r"^\| (\w+)\s*\| ([\d,]+) \|$", text, re.M)}
    assert words.wikipedia_frequency == {w: counts[w] for w in words.female + words.male}


# ----------------------------------------------------------------------------------------------
# Word-like tokens (the placebo's candidates)


def test_word_like_tokens_are_letters_of_the_attribute_words_scripts():
    from biasdask.lexicon.scripts import scripts_of, word_like

    catalog = lexicon.languages()
    for _, row in catalog.iterrows():  # every catalog translation is word-like in its own script
        pair = [str(row["male"]), str(row["female"])]
        assert word_like(pair, scripts_of(pair)).all(), pair
    latin = scripts_of(["he", "she"])
    tokens = ["the", "(", ")", "-", '"', ":", "'", "$", ";", "_", "1990", "a1", "e-mail", "don't", "", " ", "naïve"]
    assert word_like(tokens, latin).tolist() == [True, *[False] * 15, True]
    # another script's words, a mixed token, and decomposed accents (a combining mark goes with any letter)
    assert word_like(["мама", "mамa", "cafe\u0301", "\u0301"], latin).tolist() == [False, False, True, False]
    hindi = scripts_of(["पुरुष", "महिला"])  # vowel signs are marks of Devanagari
    assert hindi == {"DEVANAGARI"} and word_like(["लड़का", "१९९०", "boy"], hindi).tolist() == [True, False, False]
    japanese = scripts_of(["男性", "彼の"])
    assert japanese == {"CJK", "HIRAGANA"}
    assert word_like(["人々", "ひと", "コーヒー", "東京2020"], japanese).tolist() == [True, True, False, False]
    assert word_like(["コーヒー"], scripts_of(["カタカナ"])).tolist() == [True]  # ー is of both kana
    assert word_like(["abc", "мама", "1"], ()).tolist() == [True, True, False]  # no scripts: any letters
