"""Word lists of the classic bias tests, shipped as package data with their sources.

Every list lives in ``biasdask/lexicon/data/*.json`` in biasdask's own schema (generated once from the
reference files of the shared data and checked against them by the test suite); each file names its source
(paper, repository, commit) under ``"source"``, which :func:`source` returns.

- :func:`weat_test`: Caliskan et al. 2017, WEAT 1-10 (targets X, Y; attributes A, B), with the words the
  paper removed from its GloVe replication.
- :func:`xweat_test`, :func:`xweat_translations`: XWEAT (Lauscher & Glavaš 2019), the WEAT lists in
  de, es, hr, it, ru, tr with masculine and feminine forms.
- :func:`iat_words`: the career/family IAT words of Lewis & Lupyan 2020 with their translations per
  embedding model (``cc``, ``wiki``, ``subt``) and language.
- :func:`iat_attribute_terms`: the 8 male and 8 female IAT terms of one language as attribute sets
  (:class:`AttributeTerm`) for the full-vocabulary test.
- :func:`bolukbasi`: Bolukbasi et al. 2016 definitional and equalize pairs, gender-specific words,
  professions.
- :func:`languages`: the 26 languages of the catalog (Grave et al. 2018's fastText embeddings) with their translations of *male* and *female*.
- :func:`context_words`: the female and male context words of Valentini et al. 2022.
- :func:`available_tests`: the test labels and the languages each applies to.
"""

from __future__ import annotations

import functools
import json
from dataclasses import KW_ONLY, dataclass
from importlib import resources
from typing import Any, NamedTuple

import pandas as pd

from biasdask.errors import BiasdaskError

__all__ = [
    "IAT_MODELS",
    "NAMED_WORD_LISTS",
    "AttributeTerm",
    "XWEAT_LANGUAGES",
    "Bolukbasi",
    "ContextWords",
    "IATTranslation",
    "Profession",
    "WordSets",
    "available_tests",
    "bolukbasi",
    "context_words",
    "iat_attribute_terms",
    "iat_categories",
    "iat_languages",
    "iat_words",
    "languages",
    "named_word_list",
    "source",
    "weat_test",
    "xweat_test",
    "xweat_translations",
    "DATA_FILES",
    "AttributeTerms",
]

XWEAT_LANGUAGES: tuple[str, ...] = ("de", "es", "hr", "it", "ru", "tr")
"""The six languages XWEAT translated WEAT into."""

IAT_MODELS: tuple[str, ...] = ("cc", "wiki", "subt")
"""fastText models of Lewis & Lupyan 2020: Common Crawl (Grave et al. 2018), Wikipedia, film subtitles."""

DATA_FILES: tuple[str, ...] = (
    "weat.json",
    "xweat.json",
    "iat.json",
    "bolukbasi.json",
    "languages.json",
    "context_words.json",
)

# XWEAT spells one WEAT word differently from Caliskan et al.'s supplement; translations are keyed by
# XWEAT's spelling.
_XWEAT_SPELLING = {"bluebell": "blue-bell"}


@functools.cache
def _load(name: str) -> dict[str, Any]:
    if name not in DATA_FILES:
        raise BiasdaskError(f"unknown lexicon file {name!r}; choose from {list(DATA_FILES)}")
    text = resources.files(__name__).joinpath("data", name).read_text(encoding="utf-8")
    return json.loads(text)


def source(name: str) -> dict[str, str]:
    """The ``source`` record (paper, repository, commit, license) of one data file.

    Parameters
    ----------
    name
        A file name of :data:`DATA_FILES`, e.g. ``"weat.json"``.
    """
    return dict(_load(name)["source"])


def _source_line(name: str) -> str:
    s = _load(name)["source"]
    parts = [s["paper"], s["repository"]]
    if "commit" in s:
        parts.append("@" + s["commit"])
    return "; ".join(parts)


@dataclass(frozen=True)
class WordSets:
    """The four word sets of one WEAT-style test: targets X, Y and attributes A, B.

    Parameters
    ----------
    x, y
        Target words (X, Y). A set-level metric (:func:`biasdask.set_metric_test`) measures ``x`` (its S)
        and does not use ``y``.
    a, b
        Attribute words (A, B).
    x_name, y_name, a_name, b_name
        Names of the sets (``"Math"``, ``"Arts"``, ``"Male terms"``, ...), used in messages and coverage;
        default ``X``, ``Y``, ``A``, ``B``.
    test
        Test label recorded in results, e.g. ``"weat7"`` or ``"xweat7"``; default ``"weat"``.
    language
        Language code of the words, where known.
    removed
        Words of the source lists left out: Caliskan et al.'s exclusions (WEAT 3-5) in
        :func:`weat_test`, words without a translation in :func:`xweat_test`.
    source
        Where the lists come from.

    Examples
    --------
    >>> from biasdask import WordSets
    >>> sets = WordSets(["math", "algebra"], ["poetry", "art"], ["he", "man"], ["she", "woman"],
    ...                 x_name="Math", y_name="Arts")
    >>> sets.names, sets.test
    (('Math', 'Arts', 'A', 'B'), 'weat')
    """

    x: tuple[str, ...]
    y: tuple[str, ...] = ()
    a: tuple[str, ...] = ()
    b: tuple[str, ...] = ()
    _: KW_ONLY
    x_name: str = "X"
    y_name: str = "Y"
    a_name: str = "A"
    b_name: str = "B"
    test: str = "weat"
    language: str | None = None
    removed: tuple[str, ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        for role in ("x", "y", "a", "b"):
            words = getattr(self, role)
            # a string is kept as given: the test that receives it refuses it, naming the fix
            if not isinstance(words, (str, bytes)) and words is not None:
                object.__setattr__(self, role, tuple(words))
        object.__setattr__(self, "removed", tuple(self.removed))

    @property
    def names(self) -> tuple[str, str, str, str]:
        """The names of X, Y, A and B."""
        return (self.x_name, self.y_name, self.a_name, self.b_name)


def _test_number(n: int | str, prefix: str) -> int:
    text = str(n)
    if text.startswith(prefix):
        text = text[len(prefix) :]
    if not text.isdigit() or not 1 <= int(text) <= 10:
        raise BiasdaskError(f"unknown test {n!r}: expected 1..10 or '{prefix}1'..'{prefix}10'")
    return int(text)


def weat_test(n: int | str, *, include_removed: bool = False) -> WordSets:
    """Caliskan et al. 2017's WEAT test ``n`` (English).

    Parameters
    ----------
    n
        1..10, or a label ``"weat1"``..``"weat10"``.
    include_removed
        Keep the target words Caliskan et al. removed from their GloVe replication (WEAT 3-5: rare
        African-American names and as many randomly chosen European-American names). By default they are
        left out, as in the paper; XWEAT keeps them.

    Returns
    -------
    WordSets
        With ``language="en"``.

    Notes
    -----
    The shipped WEAT 10 list reads *failure* where the source file has the truncated *failur* (see
    ``"corrections"`` in ``weat.json``).
    """
    number = _test_number(n, "weat")
    test = _load("weat.json")["tests"][f"weat{number}"]
    sets = {}
    removed: list[str] = []
    for role in ("x", "y", "a", "b"):
        drop = set() if include_removed else set(test[role]["removed"])
        sets[role] = tuple(w for w in test[role]["words"] if w not in drop)
        removed += [w for w in test[role]["words"] if w in drop]
    return WordSets(
        test=f"weat{number}",
        language="en",
        **sets,
        x_name=test["x"]["name"],
        y_name=test["y"]["name"],
        a_name=test["a"]["name"],
        b_name=test["b"]["name"],
        removed=tuple(removed),
        source=_source_line("weat.json"),
    )


def _check_xweat_language(lang: str) -> None:
    if lang not in XWEAT_LANGUAGES:
        raise BiasdaskError(f"XWEAT has no translations into {lang!r}; choose from {list(XWEAT_LANGUAGES)}")


def xweat_translations(lang: str) -> dict[str, tuple[str, ...]]:
    """XWEAT's translation table English -> forms for one language.

    Parameters
    ----------
    lang
        One of :data:`XWEAT_LANGUAGES`.

    Returns
    -------
    dict
        English word (XWEAT's spelling) -> ``(form,)`` or ``(masculine, feminine)``; ``()`` where the
        source has no translation. Includes the proper names, which XWEAT itself does not translate.
    """
    _check_xweat_language(lang)
    return {en: tuple(forms) for en, forms in _load("xweat.json")["translations"][lang].items()}


def xweat_test(lang: str, n: int | str) -> WordSets:
    """WEAT test ``n`` translated into ``lang`` with XWEAT's conventions.

    XWEAT's rules (its code and Lauscher & Glavaš 2019 §2.2): every word of Caliskan's lists is translated (including the
    words Caliskan removed); a word whose translation marks gender contributes both the masculine and the
    feminine form; proper names and other capitalised words (*NASA*, *Einstein*, first names) are not
    translated and stay in English; a word is looked up in lower case; repeated forms within a set count
    once. Words the source left untranslated (Russian *rose*, *home*) are dropped and listed in
    ``removed``. Tests whose sets are mostly absent from an embedding (XWEAT drops tests below 80%
    coverage, in practice 3-5 and 10) are the caller's to skip.

    Parameters
    ----------
    lang
        One of :data:`XWEAT_LANGUAGES`.
    n
        1..10, or a label ``"xweat1"``..``"xweat10"`` / ``"weat1"``..``"weat10"``.

    Returns
    -------
    WordSets
        Labelled ``"xweatN"``; the set names are the English ones.
    """
    _check_xweat_language(lang)
    number = _test_number(str(n).removeprefix("x"), "weat")
    english = weat_test(number, include_removed=True)
    table = {en: forms for en, forms in xweat_translations(lang).items() if not en[:1].isupper()}
    sets = {}
    removed: list[str] = []
    for role in ("x", "y", "a", "b"):
        out: list[str] = []
        for word in getattr(english, role):
            key = _XWEAT_SPELLING.get(word, word).lower()
            if key not in table:
                forms: tuple[str, ...] = (word,)
            elif not table[key]:
                removed.append(word)
                forms = ()
            else:
                forms = table[key]
            for form in forms:
                if form not in out:
                    out.append(form)
        sets[role] = tuple(out)
    return WordSets(
        test=f"xweat{number}",
        language=lang,
        **sets,
        x_name=english.x_name,
        y_name=english.y_name,
        a_name=english.a_name,
        b_name=english.b_name,
        removed=tuple(removed),
        source=_source_line("xweat.json") + " | " + english.source,
    )


class IATTranslation(NamedTuple):
    """One translation of one IAT word (Lewis & Lupyan 2020).

    Attributes
    ----------
    category
        ``male``, ``female``, ``career`` or ``family``.
    word
        The English IAT word.
    gender
        Grammatical form of the translation: ``M``, ``F``, or ``N`` (no gender marking).
    translation_id
        Identifies the translation among the word's translations (``t1``, ``t2``, ...).
    tokens
        The embedding tokens of the translation (several for multi-word translations; repeated tokens
        count with their multiplicity, e.g. Indonesian *laki-laki*).
    """

    category: str
    word: str
    gender: str
    translation_id: str
    tokens: tuple[str, ...]


def _check_iat_model(model: str) -> None:
    if model not in IAT_MODELS:
        raise BiasdaskError(f"unknown IAT embedding model {model!r}; choose from {list(IAT_MODELS)}")


def iat_categories() -> dict[str, tuple[str, ...]]:
    """The English career/family IAT words by category (``male``, ``female``, ``career``, ``family``)."""
    return {cat: tuple(words) for cat, words in _load("iat.json")["categories"].items()}


def iat_languages(model: str | None = None) -> tuple[str, ...]:
    """Language codes with IAT translations for ``model`` (all models when None), sorted."""
    translations = _load("iat.json")["translations"]
    if model is not None:
        _check_iat_model(model)
        return tuple(sorted(translations[model]))
    return tuple(sorted({lang for per_model in translations.values() for lang in per_model}))


def iat_words(model: str, language: str) -> tuple[IATTranslation, ...]:
    """The translations of the career/family IAT words used with one embedding model and language.

    Parameters
    ----------
    model
        ``cc`` (fastText Common Crawl, Grave et al. 2018), ``wiki`` or ``subt``.
    language
        A code of :func:`iat_languages` for that model.

    Returns
    -------
    tuple of IATTranslation
        In the source's order; feed them to :func:`biasdask.stats.weat.career_family_effect`.
    """
    _check_iat_model(model)
    data = _load("iat.json")
    per_lang = data["translations"][model]
    if language not in per_lang:
        raise BiasdaskError(
            f"no IAT translations for language {language!r} with model {model!r}; available: {sorted(per_lang)}"
        )
    category = {w: cat for cat, words in data["categories"].items() for w in words}
    return tuple(
        IATTranslation(category[word], word, gender, tid, tuple(tokens))
        for word, gender, tid, tokens in per_lang[language]
    )


@dataclass(frozen=True)
class AttributeTerm:
    """One attribute word given by its translations, as in Lewis & Lupyan 2020's IAT.

    Its vector is the mean over its translations of the mean raw vector of each translation's tokens
    (tokens absent from the vocabulary, or stored as zero vectors, are skipped), the convention of
    :func:`biasdask.stats.weat.career_family_effect`. A plain word ``w`` is the term
    ``AttributeTerm(w, ((w,),))``.

    Attributes
    ----------
    label
        The term's name (the English IAT word, e.g. ``"man"``).
    translations
        Each translation's embedding tokens.
    """

    label: str
    translations: tuple[tuple[str, ...], ...]

    @property
    def tokens(self) -> tuple[str, ...]:
        """Every token of every translation, once."""
        return tuple(dict.fromkeys(t for tr in self.translations for t in tr))


class AttributeTerms(NamedTuple):
    """The male and female terms of the IAT in one language (:func:`iat_attribute_terms`)."""

    a: tuple[AttributeTerm, ...]
    b: tuple[AttributeTerm, ...]


def iat_attribute_terms(model: str, language: str) -> AttributeTerms:
    """The IAT's male and female terms (Lewis & Lupyan 2020: male, man, boy, brother, he, him, his, son
    and female, woman, girl, sister, she, her, hers, daughter) in one language, as attribute sets.

    Grammatical gender as in the IAT test: the male terms use their masculine and unmarked
    translations (``M``, ``N``), the female terms their feminine and unmarked ones (``F``, ``N``).

    Parameters
    ----------
    model, language
        As for :func:`iat_words`.

    Returns
    -------
    (male terms, female terms)
        In the IAT's order; a term lists its translations (each a tuple of tokens).
    """
    entries = iat_words(model, language)
    out = []
    for category, excluded in (("male", "F"), ("female", "M")):
        per_word: dict[str, dict[str, tuple[str, ...]]] = {}
        for e in entries:
            if e.category == category and e.gender != excluded:
                per_word.setdefault(e.word, {})[e.translation_id] = e.tokens
        order = [w for w in iat_categories()[category] if w in per_word]
        out.append(tuple(AttributeTerm(w, tuple(per_word[w].values())) for w in order))
    return AttributeTerms(out[0], out[1])


class Profession(NamedTuple):
    """A profession of Bolukbasi et al. 2016 with its two gender scores (negative = female)."""

    word: str
    definitional: float
    stereotypical: float


@dataclass(frozen=True)
class Bolukbasi:
    """Bolukbasi et al. 2016's gender word lists.

    Attributes
    ----------
    definitional_pairs
        The ten (female, male) pairs that define the gender direction.
    equalize_pairs
        Pairs that hard debiasing equalises.
    gender_specific_seed, gender_specific_full
        The seed list of gender-specific words and its expansion.
    professions
        Professions with their definitional and stereotypical scores.
    source
        Where the lists come from.
    """

    definitional_pairs: tuple[tuple[str, str], ...]
    equalize_pairs: tuple[tuple[str, str], ...]
    gender_specific_seed: tuple[str, ...]
    gender_specific_full: tuple[str, ...]
    professions: tuple[Profession, ...]
    source: str


def bolukbasi() -> Bolukbasi:
    """Bolukbasi et al. 2016's definitional and equalize pairs, gender-specific words and professions."""
    data = _load("bolukbasi.json")
    return Bolukbasi(
        definitional_pairs=tuple((f, m) for f, m in data["definitional_pairs"]),
        equalize_pairs=tuple((p, q) for p, q in data["equalize_pairs"]),
        gender_specific_seed=tuple(data["gender_specific_seed"]),
        gender_specific_full=tuple(data["gender_specific_full"]),
        professions=tuple(Profession(w, float(d), float(s)) for w, d, s in data["professions"]),
        source=_source_line("bolukbasi.json"),
    )


NAMED_WORD_LISTS: tuple[str, ...] = ("gender_specific",)
"""Word lists ``exclude_words`` may name: ``gender_specific`` = Bolukbasi et al. 2016's gender-specific
words (the 1,441 of their expanded list; English)."""


def named_word_list(name: str) -> tuple[str, ...]:
    """The words of a list of :data:`NAMED_WORD_LISTS` (e.g. ``exclude_words: gender_specific``)."""
    if name not in NAMED_WORD_LISTS:
        raise BiasdaskError(f"unknown word list {name!r}; choose from {list(NAMED_WORD_LISTS)}")
    return bolukbasi().gender_specific_full


def languages() -> pd.DataFrame:
    """The 26 languages of the full-vocabulary study of Grave et al. 2018's fastText embeddings (one or two
    per language family), with their translations of *male* and *female*.

    Returns
    -------
    pandas.DataFrame
        Columns ``name``, ``code`` (ISO 639-1), ``family``, ``branch``, ``male``, ``female`` (the
        language's translations of *male* and *female*), in the order of the full-vocabulary study's table.
    """
    data = _load("languages.json")
    return pd.DataFrame(data["languages"], columns=data["columns"])


@dataclass(frozen=True)
class ContextWords:
    """Valentini et al. 2022's gendered context words (female = A, male = B).

    Attributes
    ----------
    female, male
        The two word lists.
    wikipedia_frequency
        Occurrences of each word in the paper's English Wikipedia corpus (April 2021).
    source
        Where the lists come from.
    """

    female: tuple[str, ...]
    male: tuple[str, ...]
    wikipedia_frequency: dict[str, int]
    source: str


def context_words() -> ContextWords:
    """The female and male context words of Valentini et al. 2022 (Appendix B)."""
    data = _load("context_words.json")
    return ContextWords(
        female=tuple(data["female"]),
        male=tuple(data["male"]),
        wikipedia_frequency=dict(data["wikipedia_frequency"]),
        source=_source_line("context_words.json"),
    )


def available_tests() -> dict[str, tuple[str, ...]]:
    """Test labels and the language codes each applies to.

    Returns
    -------
    dict
        ``weat1``..``weat10`` -> ``("en",)``; ``xweat1``..``xweat10`` -> :data:`XWEAT_LANGUAGES`;
        ``career_family`` -> every language with IAT translations for at least one model (English
        included).
    """
    tests: dict[str, tuple[str, ...]] = {f"weat{i}": ("en",) for i in range(1, 11)}
    tests.update({f"xweat{i}": XWEAT_LANGUAGES for i in range(1, 11)})
    tests["career_family"] = iat_languages()
    return tests
