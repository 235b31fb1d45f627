"""Grammatical gender on stores: the BAD test and MWEAT (Zhou et al. 2019) with their paired t-tests.

The formulas live in :mod:`biasdask.stats.grammatical`. :func:`bad_test` and :func:`mweat_test` run
on the masculine and feminine forms held by a store; :func:`iat_gender_forms` and
:func:`xweat_gender_pairs` build those forms from the shipped lexicon. Missing words are skipped with a
:class:`~biasdask.engine.words.MissingWordsWarning` and listed in the result (``dropped``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr
from numpy.typing import NDArray

from biasdask._calls import PValueAlias, pair_list, word_list
from biasdask.engine.words import Form, form_label, read_forms, require_words, store_language, warn_missing
from biasdask.errors import MissingWordsError
from biasdask.io.embeddings import Embeddings, as_embeddings
from biasdask.lexicon import iat_categories, iat_words, source, xweat_translations
from biasdask.stats import grammatical as sg

__all__ = [
    "GenderForms",
    "GenderFormsResult",
    "bad_test",
    "iat_gender_forms",
    "mweat_test",
    "xweat_gender_pairs",
]


@dataclass(frozen=True)
class GenderForms:
    """Masculine and feminine forms of the career/family IAT words in one language.

    Attributes
    ----------
    targets
        ``(masculine, feminine)`` forms of the target words, one pair per translation; a translation
        without grammatical gender appears as ``(form, form)``.
    attributes
        ``(male, female)`` pairs of gender-bearing words (translations of male/female, man/woman,
        boy/girl, brother/sister, he/she, him/her, his/hers, son/daughter), for the BAD test.
    male, female
        The male and female attribute forms, for MWEAT.
    ambiguous
        Forms left out of the attributes because they translate both a male and a female word (Spanish
        *su* = his/her): they mark no gender.
    unpaired
        Target translations with only one gendered form, left out (``"category:word:translation_id"``).
    language, iat_model, source
        Where the forms come from.
    """

    targets: tuple[tuple[Form, Form], ...]
    attributes: tuple[tuple[Form, Form], ...]
    male: tuple[Form, ...]
    female: tuple[Form, ...]
    ambiguous: tuple[Form, ...]
    unpaired: tuple[str, ...]
    language: str
    iat_model: str
    source: str


def _form(tokens: tuple[str, ...]) -> Form:
    return tokens[0] if len(tokens) == 1 else tokens


def _unambiguous(words: Sequence[str], by_word: Mapping[str, list[Form]], ambiguous: set[Form]) -> tuple[Form, ...]:
    return tuple(dict.fromkeys(f for w in words for f in by_word.get(w, []) if f not in ambiguous))


def iat_gender_forms(
    language: str, iat_model: str = "cc", categories: Sequence[str] = ("career", "family")
) -> GenderForms:
    """Masculine/feminine target forms and male/female attribute words of the career/family IAT.

    From Lewis & Lupyan 2020's translations (:func:`biasdask.lexicon.iat_words`): every translation of a
    word of ``categories`` gives one target pair, (masculine, feminine) where the source has both forms
    (Spanish *ejecutivo*/*ejecutiva*, *hijos*/*hijas*) and (form, form) where it has one unmarked form
    (*salario*). The attribute pairs match the i-th male word with the i-th female word of the IAT
    (male/female, man/woman, ...), their translations in order.

    Parameters
    ----------
    language
        Language code with IAT translations for ``iat_model``.
    iat_model
        ``"cc"``, ``"wiki"`` or ``"subt"`` (the fastText model whose tokens were chosen).
    categories
        Categories of the targets.
    """
    categories = word_list(categories, "categories")
    words = iat_words(iat_model, language)
    groups: dict[tuple[str, str, str], dict[str, Form]] = defaultdict(dict)
    for t in words:
        if t.category in categories:
            groups[(t.category, t.word, t.translation_id)][t.gender] = _form(t.tokens)
    targets: list[tuple[Form, Form]] = []
    unpaired = []
    for key, forms in groups.items():
        if set(forms) == {"N"}:
            targets.append((forms["N"], forms["N"]))
        elif set(forms) == {"M", "F"}:
            targets.append((forms["M"], forms["F"]))
        else:
            unpaired.append(":".join(key))

    by_word: dict[str, list[Form]] = defaultdict(list)
    for t in sorted((t for t in words if t.category in ("male", "female")), key=lambda t: t.translation_id):
        form = _form(t.tokens)
        if form not in by_word[t.word]:
            by_word[t.word].append(form)
    cats = iat_categories()
    male_forms = {f for w in cats["male"] for f in by_word.get(w, [])}
    female_forms = {f for w in cats["female"] for f in by_word.get(w, [])}
    ambiguous = male_forms & female_forms
    attributes = [
        (m, f)
        for mw, fw in zip(cats["male"], cats["female"])
        for m, f in zip(by_word.get(mw, []), by_word.get(fw, []))
        if m not in ambiguous and f not in ambiguous
    ]
    return GenderForms(
        targets=tuple(dict.fromkeys(targets)),
        attributes=tuple(dict.fromkeys(attributes)),
        male=_unambiguous(cats["male"], by_word, ambiguous),
        female=_unambiguous(cats["female"], by_word, ambiguous),
        ambiguous=tuple(sorted(ambiguous, key=form_label)),
        unpaired=tuple(unpaired),
        language=language,
        iat_model=iat_model,
        source=source("iat.json")["paper"],
    )


def xweat_gender_pairs(language: str, words: Iterable[str] | None = None) -> tuple[tuple[str, str], ...]:
    """(masculine, feminine) forms of English words from XWEAT's translations (Lauscher & Glavaš 2019).

    Parameters
    ----------
    language
        One of the XWEAT languages (de, es, hr, it, ru, tr).
    words
        English words (XWEAT's spelling, lower case). Default: every word XWEAT translates with two
        forms (occupations and adjectives such as *ingeniero*/*ingeniera*, *enfermo*/*enferma*). A word
        with one form gives ``(form, form)``; words without a translation are left out.

    Returns
    -------
    tuple of (str, str)
        In the order of ``words`` (or of XWEAT's table), repeated pairs once.
    """
    table = xweat_translations(language)
    if words is None:
        words = [w for w, forms in table.items() if len(forms) == 2]
    words = word_list(words, "words")
    pairs = []
    for w in words:
        forms = table.get(w, ())
        if len(forms) == 1:
            pairs.append((forms[0], forms[0]))
        elif len(forms) == 2:
            pairs.append((forms[0], forms[1]))
    return tuple(dict.fromkeys(pairs))


@dataclass(frozen=True)
class GenderFormsResult(PValueAlias):
    """The BAD test or MWEAT on a store, with its paired t-test and the forms it used.

    Attributes
    ----------
    test
        ``"bad"`` or ``"mweat"``.
    language
        The store's language.
    statistic
        BAD: eq. 4, sum_i s(x_i, A) - sum_i s(y_i, B) (positive: masculine bias). MWEAT: eq. 3,
        | |sum_x s(x, A, B)| - |sum_y s(y, A, B)| |.
    t_statistic, p_value
        Paired t-test of ``masculine`` vs ``feminine`` (:func:`scipy.stats.ttest_rel`).
    effect_size
        mean / SD (ddof = 1) of the per-target differences (d_z).
    alternative
        Of the t-test.
    masculine, feminine
        Per-target scores of the masculine and feminine forms (BAD: s(x_i, A) and s(y_i, B); MWEAT:
        s(x_i, A, B) and s(y_i, A, B)), in the order of ``targets``.
    targets
        The (masculine, feminine) target pairs used.
    a, b
        The attribute forms used (BAD: the masculine and feminine forms of the kept attribute pairs).
    dropped
        What was left out for missing words: ``"masculine/feminine"`` pairs and single words.
    """

    test: str
    language: str
    statistic: float
    t_statistic: float
    p_value: float
    effect_size: float
    alternative: str
    masculine: NDArray[np.float64]
    feminine: NDArray[np.float64]
    targets: tuple[tuple[Form, Form], ...]
    a: tuple[Form, ...]
    b: tuple[Form, ...]
    dropped: tuple[str, ...]

    @property
    def bias(self) -> NDArray[np.float64]:
        """Per-target difference masculine - feminine (BAD: the per-adjective bias of "Explicit Linguistic Markers of Implicit Social Biases", Figures 1-2)."""
        return self.masculine - self.feminine

    @property
    def target_labels(self) -> list[str]:
        """``"masculine/feminine"`` labels of the targets (one form when both are the same)."""
        return [form_label(m) if m == f else f"{form_label(m)}/{form_label(f)}" for m, f in self.targets]

    @property
    def n_x(self) -> int:
        """Target pairs used (a results-cube cell records them as n_x and n_y)."""
        return len(self.targets)

    n_y = n_x

    @property
    def n_a(self) -> int:
        """Attribute forms used at the masculine end."""
        return len(self.a)

    @property
    def n_b(self) -> int:
        """Attribute forms used at the feminine end."""
        return len(self.b)


def _pairs_found(
    what: str, pairs: Sequence[tuple[Form, Form]], vec: Mapping[Form, np.ndarray], emb: xr.Dataset, minimum: int
) -> tuple[list[tuple[Form, Form]], list[str]]:
    pairs = list(dict.fromkeys((p[0], p[1]) for p in pairs))
    kept = [p for p in pairs if p[0] in vec and p[1] in vec]
    dropped = [f"{form_label(m)}/{form_label(f)}" for m, f in pairs if (m, f) not in kept]
    if len(kept) < minimum:
        raise MissingWordsError(
            f"{what}: {len(kept)} pair(s) with both forms in language {store_language(emb)!r}, need {minimum}; "
            f"missing: {', '.join(dropped) or '-'}"
        )
    warn_missing(what, dropped, emb)
    return kept, dropped


def _gender_result(test: str, res, emb, targets, a, b, dropped) -> GenderFormsResult:
    return GenderFormsResult(
        test=test,
        language=store_language(emb),
        statistic=res.statistic,
        t_statistic=res.t_statistic,
        p_value=res.p_value,
        effect_size=res.effect_size,
        alternative=res.alternative,
        masculine=res.masculine,
        feminine=res.feminine,
        targets=tuple(targets),
        a=tuple(a),
        b=tuple(b),
        dropped=tuple(dropped),
    )


def bad_test(
    emb: Embeddings,
    targets: Sequence[tuple[Form, Form]],
    attributes: Sequence[tuple[Form, Form]],
    *,
    alternative: str = "two-sided",
) -> GenderFormsResult:
    """The BAD test (the BAD study's eq. 4-5) and its paired t-test on the forms a store holds.

    Parameters
    ----------
    emb
        Embedding Dataset or store URL of a language with grammatical gender.
    targets
        (masculine, feminine) forms of gender-unbearing target words (adjectives, occupations); an
        unmarked word appears as (form, form). At least two pairs must be found.
    attributes
        (masculine, feminine) forms of gender-bearing attribute words (semantic gender terms, names).
    alternative
        Of the t-test: ``"two-sided"`` (the BAD paper's), ``"less"``, ``"greater"``.

    Returns
    -------
    GenderFormsResult
        Positive statistic: masculine bias, negative: feminine.

    Warns
    -----
    MissingWordsWarning
        Pairs dropped because a form is missing.

    Raises
    ------
    MissingWordsError
        Fewer than two target pairs or no attribute pair left; names the missing forms.
    """
    targets, attributes = pair_list(targets, "targets"), pair_list(attributes, "attributes")
    emb = as_embeddings(emb)
    vec = read_forms(emb, [f for p in (*targets, *attributes) for f in p])
    kept_t, dropped_t = _pairs_found("bad_test, targets", targets, vec, emb, 2)
    kept_a, dropped_a = _pairs_found("bad_test, attributes", attributes, vec, emb, 1)
    x, y = (np.array([vec[p[i]] for p in kept_t]) for i in (0, 1))
    a, b = (np.array([vec[p[i]] for p in kept_a]) for i in (0, 1))
    res = sg.bad_test(x, y, a, b, alternative=alternative)
    return _gender_result(
        "bad", res, emb, kept_t, [p[0] for p in kept_a], [p[1] for p in kept_a], [*dropped_t, *dropped_a]
    )


def mweat_test(
    emb: Embeddings,
    targets: Sequence[tuple[Form, Form]],
    a: Sequence[Form],
    b: Sequence[Form],
    *,
    alternative: str = "two-sided",
) -> GenderFormsResult:
    """MWEAT (Zhou et al. 2019) and the paired t-test of masculine vs feminine forms.

    Parameters
    ----------
    emb
        Embedding Dataset or store URL.
    targets
        (masculine, feminine) forms of the targets (e.g. occupations); at least two pairs must be found.
    a, b
        Male and female attribute words (sizes may differ; missing ones are skipped).
    alternative
        Of the t-test.

    Returns
    -------
    GenderFormsResult

    Warns
    -----
    MissingWordsWarning
        Target pairs or attribute words left out.

    Raises
    ------
    MissingWordsError
        Fewer than two target pairs, or no word of ``a`` or of ``b``.
    """
    targets, a, b = pair_list(targets, "targets"), word_list(a, "a"), word_list(b, "b")
    emb = as_embeddings(emb)
    vec = read_forms(emb, [*(f for p in targets for f in p), *a, *b])
    kept_t, dropped = _pairs_found("mweat_test, targets", targets, vec, emb, 2)
    ends = []
    for name, words in (("A", a), ("B", b)):
        words = list(dict.fromkeys(words))
        missing = [form_label(w) for w in words if w not in vec]
        found = [w for w in words if w in vec]
        require_words(f"mweat_test, attributes {name}", len(found), missing, emb)
        warn_missing(f"mweat_test, attributes {name}", missing, emb)
        ends.append(found)
        dropped += missing
    x, y = (np.array([vec[p[i]] for p in kept_t]) for i in (0, 1))
    res = sg.mweat_test(
        x, y, np.array([vec[w] for w in ends[0]]), np.array([vec[w] for w in ends[1]]), alternative=alternative
    )
    return _gender_result("mweat", res, emb, kept_t, ends[0], ends[1], dropped)
