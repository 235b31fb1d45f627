"""The study file: one YAML document describing a whole run (languages × methods × tests).

Example::

    output: s3://my-bucket/results/gender.zarr
    embeddings: s3://my-bucket/emb/{language}.zarr     # store of each language (a template)
    sources: https://dl.fbaipublicfiles.com/fasttext/vectors-crawl/cc.{language}.300.vec.gz  # missing stores made from these
    ingest: {dim: 300}                                # how: format, max_words, chunk_words; dim every source must have
    languages: [ar, de, en, zh]                       # or a mapping, see below
    methods: [uniform, zipf]
    associations: [cosine, ripa]  # per-word association of the gender/context tests (default [cosine])
    tests: [gender, weathub.weat7]
    word_sets:                   # files in WEATHub's layout; test NAME.TEST fills {test}
      weathub: https://raw.githubusercontent.com/iamshnoo/weathub/main/data/{language}_all/{test}.json
    n_permutations: 9999
    seed: 20240601
    min_coverage: 0.8            # classic tests: skip a test whose word set is found below 80 %
    iat_model: cc                # career_family translations: cc | wiki | subt
    alternative: two-sided       # default; auto = the full-vocabulary test's original rule (type-I rate about 2α)
    correction: holm             # of p over each family of languages: holm (default) | bh | by | none
    alpha: 0.05                  # the level the correction, the report and the figures use
    ci_level: 0.95               # effect size intervals (classic tests: bootstrap of target words); null: none
    placebo: {n: 1000, exclude: [], words: letters, rank_ratio: 2, min_candidates: 50}  # default; false: none
    attributes: iat              # catalog (default) | iat | bolukbasi | {a: [...], b: [...]} | {pairs: [[a, b], ...]} | {pairs: iat}; also per language
    exclude_words: gender_specific   # or a list of words
    dedupe_vectors: true         # score each distinct vector once (its first, most frequent word)
    storage_options:                                  # fsspec options of every URL
      endpoint_url: https://s3.example.org
      key: ${AWS_ACCESS_KEY_ID}                       # read from the environment at run time
      secret: ${AWS_SECRET_ACCESS_KEY}

Tests: ``gender`` (the full-vocabulary test), ``context`` (Valentini et al. 2022's context words, English),
``weat1``..``weat10`` (English), ``xweat1``..``xweat10`` (de, es, hr, it, ru, tr), ``career_family``
(languages with IAT translations) and the set-level metrics ``rnd``, ``rnsb``, ``mac``, ``ect``, ``nas``
(on WEAT-7's sets in English, XWEAT-7's in de, es, hr, it, ru, tr, the IAT words elsewhere; or the
study's ``set_metric_words: {s: [...], a: [...], b: [...]}``, for all languages or per language), and the
tests of the study's ``word_sets`` files (:mod:`biasdask.study.wordsets`). Each language runs the tests that apply to it; the other cells are
written as "not applicable" (NaN, with a ``note``). Classic tests have no weighting: their values are
the same in every ``method`` cell.

Associations: the full-vocabulary tests (``gender``, ``context``) run once per association of
``associations`` (:data:`biasdask.stats.association.ASSOCIATIONS`: ``cosine``, the full-vocabulary test's u and the
default; ``euclidean``, ``ripa``, ``semaxis``). In the results cube the ``cosine`` run keeps the test's
label (``gender``) and every other gets its own (``gender.ripa``), with the cube coordinate
``association`` along ``test`` saying which (``none`` for the classic tests, to which associations do
not apply). ``ripa`` pairs the i-th word of A with the i-th of B, so explicit attribute lists must then
have equal lengths.

Sources: ``sources`` is a URL template with ``{language}`` or a mapping of language code to URL; a
language's own ``source`` wins. With several embeddings each names its own (``embeddings: {cc: {store:
..., sources: ...}}``; a language's ``source`` then maps embedding names to URLs). A language with a
source has its store (which must be a URL) made by the run when it is missing, and a store made from its source unchanged is used as it is
(:mod:`biasdask.study.sources`). Neither ``sources`` nor ``ingest`` is part of the canonical study: the
fingerprint of each store, which every cell records, says what the cells were computed from.

``languages`` may also map codes to settings: ``{en: {store: ..., a: [male, man], b: [female, woman]}}``
or ``{fr: {attributes: iat}}``. The attribute words of the ``gender`` test (``attributes``, for all
languages or per language): ``catalog`` (default; the catalog's translations of *male* and *female* from
``biasdask languages``), ``iat`` (the 8 male and 8 female terms of Lewis & Lupyan 2020 in the
``iat_model``'s translations, masculine/feminine forms as in the IAT test) or explicit lists
``{a: [...], b: [...]}``; or base pairs (a[i], b[i]): ``bolukbasi`` (Bolukbasi et al. 2016's ten
definitional pairs, English: he/she, man/woman, ...), ``{pairs: [[he, she], [man, woman], ...]}`` (the
first word of each pair in A) or ``{pairs: iat}`` (the IAT's terms paired in their order: male/female,
man/woman, boy/girl, ...). A ``gender`` cell of pairs also reports their internal consistency over the
whole vocabulary (``cronbach_alpha``, ``split_half``: each pair's association a per-word item), gathered
in the pass that computes the scores. Each cell records which (``attribute_set``). Validation happens
before any work starts and every error names the offending key.

Several embeddings of the same languages (corpora, training seeds) in one study: ``embeddings`` maps a
name of each to its store template, or to a mapping ``{store: template, languages: [...], iat_model: ...}``
whose ``languages`` are the study's languages this embedding has (default: all) and ``iat_model`` its IAT
translations (default: the study's)::

    embeddings:
      cc: /data/iat/cc/{language}.zarr
      wiki: /data/iat/wiki/{language}.zarr
      subt:
        store: /data/iat/subt/{language}.zarr
        languages: [de, en]               # only these of the study's languages
        iat_model: subt
    languages:
      de:
      en:
      fr: {store: {wiki: /elsewhere/fr-wiki.zarr}}   # a language's own store, per embedding

Each embedding is an ordinary study (:class:`EmbeddingStudies`): its results cube is the child group
``<output>/<name>``, the cube a study of that embedding alone would write.

Credentials are only ever referenced (``${VAR}``); their values are resolved when a store is opened
and never written to the results store or the log.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import xarray as xr
import yaml
from dask.base import tokenize

from biasdask._calls import list_syntax
from biasdask.errors import BiasdaskError, ConfigError
from biasdask.io.embeddings import as_embeddings
from biasdask.io.formats import FORMATS
from biasdask.io.fs import display_url, storage_options_for
from biasdask.io.results import FULL_VOCABULARY_TESTS, cube_label, embedding_url
from biasdask.io.store import check_language_code
from biasdask.lexicon import (
    NAMED_WORD_LISTS,
    AttributeTerm,
    AttributeTerms,
    WordSets,
    available_tests,
    bolukbasi,
    iat_attribute_terms,
    iat_categories,
    iat_languages,
)
from biasdask.lexicon import languages as catalog
from biasdask.lexicon.vocabulary import Vocabulary
from biasdask.stats.association import ASSOCIATIONS
from biasdask.stats.multitest import CORRECTIONS
from biasdask.stats.permutation import MAX_PERMUTATIONS
from biasdask.stats.placebo import DEFAULT_MATCH, PlaceboMatch
from biasdask.stats.resampling import ALTERNATIVES
from biasdask.stats.setmetrics import METRICS
from biasdask.stats.weat import SIMILARITIES
from biasdask.stats.weights import METHODS
from biasdask.study.wordsets import (
    canonical_word_sets,
    changed_word_sets,
    file_test_labels,
    read_study_word_sets,
    word_set_sources,
)

__all__ = [
    "ATTRIBUTE_SETS",
    "DEFAULT_PLACEBO",
    "EmbeddingStudies",
    "PAIRED_SETS",
    "IAT_MODELS",
    "IngestOptions",
    "known_tests",
    "LanguageSpec",
    "load_config",
    "parse_config",
    "resolve_env",
    "study_changes",
    "StudyChanges",
    "StudyConfig",
]


IAT_MODELS = ("cc", "wiki", "subt")
#: the name of an embedding of a study: a child group of the results store
_EMBEDDING_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_ENV_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_KEYS = {
    "output",
    "embeddings",
    "sources",
    "ingest",
    "languages",
    "methods",
    "tests",
    "n_permutations",
    "seed",
    "alternative",
    "similarity",
    "max_words",
    "exclude_attributes",
    "exclude_words",
    "batch_size",
    "storage_options",
    "save_scores",
    "save_null",
    "min_coverage",
    "iat_model",
    "attributes",
    "dedupe_vectors",
    "set_metric_words",
    "associations",
    "correction",
    "alpha",
    "ci_level",
    "placebo",
    "word_sets",
}
#: attribute sets of base pairs (a[i], b[i]): Bolukbasi et al. 2016's ten definitional pairs (English), pairs
#: the study names, the IAT's male and female terms paired in their order; a gender cell of one reports
#: the pairs' internal consistency over the whole vocabulary
PAIRED_SETS = ("bolukbasi", "pairs", "iat_pairs")
ATTRIBUTE_SETS = ("catalog", "iat", "explicit", *PAIRED_SETS)

#: Placebo pairs per test unless the study says otherwise (``placebo: {n: ...}``; ``placebo: false``:
#: none). Their statistics come from moments gathered in the scoring pass, so a study with them takes
#: about as long as without (``benchmarks/placebo.py``).
DEFAULT_PLACEBO = 1000


def known_tests() -> tuple[str, ...]:
    """Every test label a study may name: ``gender`` (the full-vocabulary test), ``context`` (Valentini et al. 2022), the classic
    tests of the lexicon (``weat1``..``weat10``, ``xweat1``..``xweat10``, ``career_family``) and the
    set-level metrics ``rnd``, ``rnsb``, ``mac``, ``ect``, ``nas``."""
    return (*FULL_VOCABULARY_TESTS, *available_tests(), *METRICS)


@dataclass(frozen=True)
class LanguageSpec:
    """One language of a study: its code, embedding store and attribute words.

    ``a`` and ``b`` hold words, or :class:`~biasdask.lexicon.AttributeTerm` for ``attribute_set``
    ``"iat"``; ``attribute_set`` is one of :data:`ATTRIBUTE_SETS`.
    """

    code: str
    store: Any  # a URL; from Python also an in-memory embedding (see biasdask.as_embeddings)
    a: tuple[str | AttributeTerm, ...]
    b: tuple[str | AttributeTerm, ...]
    attribute_set: str = "catalog"
    set_metric_words: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] | None = None
    """Words S, A, B of the set-level metrics (``rnd`` ...), when the study names them."""
    source: str | None = None
    """The embedding file its store is ingested from when missing (``sources``), or None."""

    @property
    def paired(self) -> bool:
        """Whether ``a`` and ``b`` are base pairs (a[i], b[i]) (:data:`PAIRED_SETS`)."""
        return self.attribute_set in PAIRED_SETS


@dataclass(frozen=True)
class IngestOptions:
    """How a study ingests its sources (the study key ``ingest``): as :func:`biasdask.ingest` takes them
    (``format``, ``max_words``, ``chunk_words``), and the dimension every source must have (``dim``;
    None: any)."""

    input_format: str = "auto"
    max_words: int | None = None
    chunk_words: int | None = None
    dim: int | None = None


@dataclass(frozen=True)
class StudyConfig:
    """A validated study (see the module docstring for the YAML form)."""

    output: str
    languages: tuple[LanguageSpec, ...]
    methods: tuple[str, ...] = ("uniform", "zipf")
    tests: tuple[str, ...] = ("gender",)
    n_permutations: int = 9999
    seed: int = 0
    alternative: str = "two-sided"
    similarity: str = "cosine"
    max_words: int | None = None
    exclude_attributes: bool = False
    exclude_words: tuple[str, ...] | str = ()
    dedupe_vectors: bool = False
    batch_size: int | None = None
    storage_options: dict[str, Any] = field(default_factory=dict)
    save_scores: bool = True
    save_null: bool = True
    min_coverage: float = 0.8
    iat_model: str = "cc"
    associations: tuple[str, ...] = ("cosine",)
    correction: str = "holm"
    alpha: float = 0.05
    ci_level: float | None = 0.95
    placebo: int = DEFAULT_PLACEBO
    placebo_exclude: tuple[str, ...] = ()
    placebo_match: PlaceboMatch = DEFAULT_MATCH
    word_sets: dict[str, dict[str, WordSets]] = field(default_factory=dict)
    """The tests of the study's ``word_sets`` files: test label -> language -> its word sets (a language
    without a file absent; :mod:`biasdask.study.wordsets`)."""
    ingest: IngestOptions = IngestOptions()

    def test_labels(self) -> tuple[str, ...]:
        """The cube's test labels: each full-vocabulary test once per association, the others once."""
        return tuple(
            cube_label(t, a) if t in FULL_VOCABULARY_TESTS else t
            for t in self.tests
            for a in (self.associations if t in FULL_VOCABULARY_TESTS else ("none",))
        )

    def canonical(self) -> dict[str, Any]:
        """Everything that determines the results (not where they go, nor credentials)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}  # not asdict: it would deep-copy in-memory stores
        # not the cells' values: the correction of p over the cube is recomputed at the end of every run
        # nor how a store was made: its fingerprint, which every cell records, tells its contents
        for volatile in (
            "output",
            "storage_options",
            "batch_size",
            "save_scores",
            "save_null",
            "correction",
            "alpha",
            "ingest",
        ):
            d.pop(volatile)
        if self.associations == ("cosine",):
            d.pop("associations")  # the default leaves the hash of studies written before the option
        if self.ci_level == 0.95:
            d.pop("ci_level")  # likewise
        word_sets = d.pop("word_sets")
        if word_sets:  # the words read, not where from: a file whose words change is a changed study
            d["word_sets"] = canonical_word_sets(word_sets)
        exclude, match = d.pop("placebo_exclude"), d.pop("placebo_match")
        if self.placebo:
            d["placebo"] = {
                "n": self.placebo,
                "exclude": list(exclude),
                "match": "rank",
                "words": match.words,
                "rank_ratio": match.rank_ratio,
                "min_candidates": match.min_candidates,
            }
        else:
            d.pop("placebo")
        d["languages"] = [
            {
                "code": s.code,
                "store": _store_label(s.store),
                "attributes": s.attribute_set,
                "a": _plain(s.a),
                "b": _plain(s.b),
                **({"set_metric_words": [list(w) for w in s.set_metric_words]} if s.set_metric_words else {}),
            }
            for s in self.languages
        ]
        for key in ("methods", "tests", *(("associations",) if "associations" in d else ())) + (
            () if isinstance(self.exclude_words, str) else ("exclude_words",)
        ):
            d[key] = list(d[key])
        return d

    def canonical_yaml(self) -> str:
        """The canonical form as YAML text (stored in the results' ``config`` attribute)."""
        return yaml.safe_dump(self.canonical(), sort_keys=True, allow_unicode=True)

    def digest(self) -> str:
        """SHA-256 of :meth:`canonical_yaml`: two configs with the same digest give the same cube."""
        return hashlib.sha256(self.canonical_yaml().encode()).hexdigest()

    @property
    def vocabulary(self) -> Vocabulary:
        """The study's filters of the targets (``max_words``, ``exclude_attributes``, ``exclude_words``,
        ``dedupe_vectors``) as one :class:`~biasdask.Vocabulary`."""
        return Vocabulary(
            max_words=self.max_words,
            exclude_attributes=self.exclude_attributes,
            exclude_words=self.exclude_words,
            dedupe_vectors=self.dedupe_vectors,
        )

    def resolved_storage_options(self) -> dict[str, Any]:
        """``storage_options`` with ``${VAR}`` references replaced by the environment's values."""
        return resolve_env(self.storage_options, "storage_options")


@dataclass(frozen=True)
class EmbeddingStudies:
    """A study of several embeddings of the same languages (``embeddings`` a mapping of names to store
    templates; see the module docstring): one ordinary study per embedding.

    Attributes
    ----------
    output : str
        The results store: a group whose child ``<output>/<name>`` is each embedding's results cube.
    studies : dict of str to StudyConfig
        Each embedding's study, by name, in the study file's order; its ``output`` is its child group.
        The studies differ only in their languages' stores (and ``iat_model``, and the languages, where
        an embedding names its own).
    storage_options : dict
        fsspec options of every URL, as in :class:`StudyConfig`.
    """

    output: str
    studies: dict[str, StudyConfig]
    storage_options: dict[str, Any] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        """The embeddings' names, in the study file's order."""
        return tuple(self.studies)

    def resolved_storage_options(self) -> dict[str, Any]:
        """``storage_options`` with ``${VAR}`` references replaced by the environment's values."""
        return resolve_env(self.storage_options, "storage_options")


def _plain(words: tuple[str | AttributeTerm, ...]) -> list:
    """Attribute words as YAML-safe values (a term as ``{term: label, translations: [[tokens]]}``)."""
    return [
        w if isinstance(w, str) else {"term": w.label, "translations": [list(t) for t in w.translations]} for w in words
    ]


def resolve_env(value: Any, key: str) -> Any:
    """Replace ``${VAR}`` strings (recursively) by environment values; a missing one is an error."""
    if isinstance(value, dict):
        return {k: resolve_env(v, f"{key}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_env(v, f"{key}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str):
        m = _ENV_REF.match(value)
        if m:
            if m.group(1) not in os.environ:
                raise ConfigError(f"{key}: environment variable {m.group(1)} is not set")
            return os.environ[m.group(1)]
    return value


def _words(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):  # a str is not a word list: never read "male" as m, a, l, e
        raise ConfigError(
            f"{key}: expected a list of words, got the string {value!r}: write {list_syntax(value, 'yaml')}"
        )
    if not isinstance(value, list) or not value or not all(isinstance(w, str) and w for w in value):
        raise ConfigError(f"{key}: expected a non-empty list of words")
    return tuple(value)


def _int(
    raw: dict, key: str, default: int | None, minimum: int, allow_none: bool = False, maximum: int | None = None
) -> int | None:
    value = raw.get(key, default)
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{key}: expected an integer >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{key}: at most {maximum:,}, got {value:,}")
    return value


def _fraction(raw: dict, key: str, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ConfigError(f"{key}: expected a number between 0 and 1, got {value!r}")
    return float(value)


def _correction(raw: dict) -> str:
    value = raw.get("correction", "holm")
    if value not in (*CORRECTIONS, "none"):
        raise ConfigError(f"correction: {value!r} is not one of {[*CORRECTIONS, 'none']}")
    return value


def _alpha(raw: dict) -> float:
    value = raw.get("alpha", 0.05)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ConfigError(f"alpha: expected a number strictly between 0 and 1, got {value!r}")
    return float(value)


def _ci_level(raw: dict) -> float | None:
    value = raw.get("ci_level", 0.95)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ConfigError(
            f"ci_level: expected a confidence level strictly between 0 and 1 (or null for none), got {value!r}"
        )
    return float(value)


def _placebo(raw: dict) -> dict[str, Any]:
    value = raw.get("placebo", True)
    if value is False or value is None:
        return {"placebo": 0, "placebo_exclude": ()}
    if value is True:
        value = {}
    if not isinstance(value, dict):
        raise ConfigError(
            f"placebo: expected a mapping {{n: 1000, exclude: [...], match: rank, words: letters, rank_ratio: 2, "
            f"min_candidates: 50}} or false, got {value!r}"
        )
    allowed = {"n", "exclude", "match", "words", "rank_ratio", "min_candidates"}
    unknown = set(value) - allowed
    if unknown:
        raise ConfigError(f"placebo: unknown key(s) {sorted(unknown)}; allowed: {', '.join(sorted(allowed))}")
    n = value.get("n", DEFAULT_PLACEBO)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1_000_000:
        raise ConfigError(f"placebo.n: expected a number of placebo pairs from 1 to 1,000,000, got {n!r}")
    if value.get("match", "rank") != "rank":
        raise ConfigError(
            f"placebo.match: only 'rank' (frequency-rank neighbourhoods) is implemented, got {value['match']!r}"
        )
    exclude = value.get("exclude") or []
    if not isinstance(exclude, list) or not all(isinstance(w, str) for w in exclude):
        raise ConfigError("placebo.exclude: expected a list of words")
    defaults = PlaceboMatch()
    options = {key: value.get(key, getattr(defaults, key)) for key in ("words", "rank_ratio", "min_candidates")}
    try:
        match = PlaceboMatch(**options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"placebo.{exc}") from None
    return {"placebo": n, "placebo_exclude": tuple(exclude), "placebo_match": match}


def _bool(raw: dict, key: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    return value


def _choice_list(raw: dict, key: str, default: tuple[str, ...], choices: tuple[str, ...]) -> tuple[str, ...]:
    value = raw.get(key, list(default))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{key}: expected a non-empty list")
    bad = [v for v in value if v not in choices]
    if bad:
        raise ConfigError(f"{key}: unknown value(s) {bad}; choose from {list(choices)}")
    if len(set(value)) != len(value):
        raise ConfigError(f"{key}: repeated values in {value}")
    return tuple(value)


def _attribute_choice(value: Any, key: str) -> tuple[str, tuple[str, ...] | None, tuple[str, ...] | None]:
    """``attributes:`` as (set name, a, b): ``catalog``, ``iat``, ``bolukbasi``, explicit
    ``{a: [...], b: [...]}``, or base pairs ``{pairs: [[a, b], ...]}`` or ``{pairs: iat}``."""
    if value in ("catalog", "iat"):
        return value, None, None
    if value == "bolukbasi":  # (female, male) pairs; A is male
        pairs = bolukbasi().definitional_pairs
        return "bolukbasi", tuple(male for _, male in pairs), tuple(female for female, _ in pairs)
    if isinstance(value, dict) and "pairs" in value:
        if set(value) != {"pairs"}:
            raise ConfigError(
                f"{key}: base pairs stand alone: {{pairs: [[a, b], ...]}} or {{pairs: iat}}, without a or b"
            )
        if value["pairs"] == "iat":
            return "iat_pairs", None, None
        a, b = _pairs(value["pairs"], f"{key}.pairs")
        return "pairs", a, b
    if isinstance(value, dict):
        extra = set(value) - {"a", "b"}
        if extra or "a" not in value or "b" not in value:
            raise ConfigError(f"{key}: explicit attribute lists need exactly the keys a and b")
        return "explicit", _words(value["a"], f"{key}.a"), _words(value["b"], f"{key}.b")
    raise ConfigError(
        f"{key}: expected catalog, iat, bolukbasi, a mapping {{a: [...], b: [...]}} or base pairs "
        f"{{pairs: [[a, b], ...]}} (or {{pairs: iat}}), got {value!r}"
    )


def _pairs(value: Any, key: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Base pairs ``[[a, b], ...]`` as the words of A and of B, in order."""
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{key}: expected a non-empty list of pairs [[a, b], ...] (or iat)")
    for i, pair in enumerate(value):
        if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(w, str) and w for w in pair):
            raise ConfigError(f"{key}[{i}]: expected a pair of two words [a, b], got {pair!r}")
        if pair[0] == pair[1]:
            raise ConfigError(f"{key}[{i}]: a pair of one word twice ({pair[0]!r}) has no direction")
    a, b = tuple(p[0] for p in value), tuple(p[1] for p in value)
    for side, words in (("first", a), ("second", b)):
        repeated = sorted({w for w in words if words.count(w) > 1})
        if repeated:
            raise ConfigError(f"{key}: {', '.join(map(repr, repeated))} is the {side} word of more than one pair")
    return a, b


def _iat_pairs(terms: AttributeTerms) -> tuple[tuple[AttributeTerm, ...], tuple[AttributeTerm, ...]]:
    """The IAT's male and female terms paired in their order (male/female, man/woman, ... son/daughter),
    the pairs of which a language lacks a term left out."""
    male, female = (dict((t.label, t) for t in side) for side in terms)
    order = iat_categories()
    pairs = [(male[m], female[f]) for m, f in zip(order["male"], order["female"]) if m in male and f in female]
    return tuple(m for m, _ in pairs), tuple(f for _, f in pairs)


def _set_metric_words(value: Any, key: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] | None:
    """``set_metric_words: {s: [...], a: [...], b: [...]}`` (the sets of rnd, rnsb, mac, ect, nas)."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"s", "a", "b"}:
        raise ConfigError(f"{key}: expected a mapping with exactly the keys s, a and b (lists of words)")
    return tuple(_words(value[k], f"{key}.{k}") for k in ("s", "a", "b"))  # type: ignore[return-value]


def _language_codes(raw: dict) -> list[str]:
    """The codes of ``languages`` as given (validated by :func:`_languages`)."""
    entries = raw.get("languages")
    return [str(c) for c in entries] if isinstance(entries, (list, dict)) else []


def _template(value: Any, key: str) -> str | None:
    """A store template (``{language}`` filled in per language), or None."""
    if value is None:
        return None
    if not isinstance(value, str) or "{language}" not in value:
        raise ConfigError(f"{key}: expected a URL template containing '{{language}}'")
    try:
        value.format(language="xx")
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(
            f"{key}: the template {value!r} has a bad field ({exc}); only {{language}} is filled in"
        ) from None
    return value


@dataclass(frozen=True)
class _Source:
    """Where the stores of one embedding of a study come from."""

    name: str | None  # None: the study's one embedding
    names: tuple[str, ...]  # every embedding of the study
    template: str | None
    key: str  # the study key of ``template``
    iat_model: str
    codes: frozenset[str] | None = None  # the study's languages this embedding has (None: all)
    sources: Any = None  # the files its missing stores are ingested from (``sources``), or None
    sources_key: str = "sources"


def _sources(raw: dict) -> tuple[_Source, ...]:
    """The study's embeddings: one (``embeddings`` a template, or none) or several (a mapping of names)."""
    value, iat_model = raw.get("embeddings"), raw.get("iat_model", "cc")
    if not isinstance(value, dict):
        return (_Source(None, (), _template(value, "embeddings"), "embeddings", iat_model, None, raw.get("sources")),)
    if raw.get("sources") is not None:
        raise ConfigError(
            "sources: the study has several embeddings: give each embedding its own (embeddings.NAME.sources)"
        )
    if not value:
        raise ConfigError("embeddings: expected a store template, or a mapping of embedding names to store templates")
    names = tuple(str(name) for name in value)
    folded = sorted({n for n in names if [m.lower() for m in names].count(n.lower()) > 1})
    if folded:
        raise ConfigError(f"embeddings: the names {', '.join(folded)} differ only in case (one store would hold both)")
    codes = _language_codes(raw)
    sources = []
    for name, entry in value.items():
        key = f"embeddings.{name}"
        if not isinstance(name, str) or not _EMBEDDING_NAME.match(name):
            raise ConfigError(
                f"{key}: {name!r} is not a name for an embedding (letters, digits, '_' and '-', "
                "starting with a letter or digit)"
            )
        if entry is None or isinstance(entry, str):
            entry, template_key = {"store": entry}, key
        elif isinstance(entry, dict):
            template_key = f"{key}.store"
        else:
            raise ConfigError(
                f"{key}: expected a store template or a mapping with store, languages, iat_model, sources"
            )
        extra = set(entry) - {"store", "languages", "iat_model", "sources"}
        if extra:
            raise ConfigError(f"{key}: unknown key(s) {sorted(extra)}; allowed: store, languages, iat_model, sources")
        model = entry.get("iat_model", iat_model)
        if model not in IAT_MODELS:
            raise ConfigError(f"{key}.iat_model: {model!r} is not one of {list(IAT_MODELS)}")
        subset = entry.get("languages")
        if subset is not None:
            if not isinstance(subset, list) or not subset:
                raise ConfigError(f"{key}.languages: expected a non-empty list of the study's language codes")
            strange = [str(c) for c in subset if str(c) not in codes]
            if strange:
                raise ConfigError(f"{key}.languages: {', '.join(map(repr, strange))} not in the study's languages")
            subset = frozenset(str(c) for c in subset)
        template = _template(entry.get("store"), template_key)
        sources.append(
            _Source(name, names, template, template_key, model, subset, entry.get("sources"), f"{key}.sources")
        )
    return tuple(sources)


def _language_store(settings: dict, source: _Source, key: str, code: str) -> Any:
    """The store of one language in one embedding: its own (``store``), else the embedding's template."""
    given, where = settings.get("store"), f"{key}.store"
    if source.name is not None:
        if given is not None and not isinstance(given, dict):
            raise ConfigError(
                f"{where}: the study has several embeddings ({', '.join(source.names)}): give a store per "
                f"embedding, {{{source.names[0]}: URL, ...}}"
            )
        given = given or {}
        unknown = [str(name) for name in given if name not in source.names]
        if unknown:
            raise ConfigError(f"{where}: no embedding {', '.join(unknown)} (embeddings: {', '.join(source.names)})")
        given, where = given.get(source.name), f"{where}.{source.name}"
    elif isinstance(given, dict):
        raise ConfigError(f"{where}: expected a store URL (stores per embedding need a mapping of 'embeddings')")
    if given is None or (isinstance(given, str) and not given):
        given = source.template.format(language=code) if source.template else None
    if not isinstance(given, str) and not _is_embedding_object(given):
        template = "an 'embeddings' template" if source.name is None else f"a store template {source.key}"
        raise ConfigError(f"{where}: no store URL (give one, or {template})")
    return given


def _languages(raw: dict, source: _Source) -> tuple[LanguageSpec, ...]:
    entries = raw.get("languages")
    if isinstance(entries, list):
        repeated = sorted({str(c) for c in entries if entries.count(c) > 1})
        if repeated:
            raise ConfigError(f"languages: {', '.join(map(repr, repeated))} listed more than once")
        entries = {code: {} for code in entries}
    if not isinstance(entries, dict) or not entries:
        raise ConfigError("languages: expected a non-empty list of codes or a mapping of code to settings")
    table = catalog().set_index("code")
    default_set = _attribute_choice(raw.get("attributes", "catalog"), "attributes")
    default_metric_words = _set_metric_words(raw.get("set_metric_words"), "set_metric_words")
    specs = []
    for code, settings in entries.items():
        key = f"languages.{code}"
        try:
            check_language_code(str(code))
        except Exception as exc:
            raise ConfigError(f"{key}: {exc}") from None
        if isinstance(settings, str) or _is_embedding_object(settings):
            settings = {"store": settings}
        if settings is None:
            settings = {}
        if not isinstance(settings, dict):
            raise ConfigError(f"{key}: expected a store URL or a mapping with store, a, b, attributes")
        extra = set(settings) - {"store", "source", "a", "b", "attributes", "set_metric_words"}
        if extra:
            raise ConfigError(
                f"{key}: unknown key(s) {sorted(extra)}; allowed: store, source, a, b, attributes, set_metric_words"
            )
        if source.codes is not None and str(code) not in source.codes:
            if isinstance(settings.get("store"), dict) and source.name in settings["store"]:
                raise ConfigError(
                    f"{key}.store.{source.name}: {code} is not among the languages of {source.key.removesuffix('.store')}"
                )
            continue
        store = _language_store(settings, source, key, str(code))
        if ("a" in settings or "b" in settings) and "attributes" in settings:
            raise ConfigError(f"{key}: give either attributes or a and b, not both")
        if "a" in settings or "b" in settings:
            # A side not given keeps the catalog's word.
            name = "explicit"
            a = _words(settings["a"], f"{key}.a") if "a" in settings else None
            b = _words(settings["b"], f"{key}.b") if "b" in settings else None
        elif "attributes" in settings:
            name, a, b = _attribute_choice(settings["attributes"], f"{key}.attributes")
        else:
            name, a, b = default_set
        if name == "bolukbasi" and code != "en":
            raise ConfigError(
                f"{key}: attributes bolukbasi: Bolukbasi et al. 2016's definitional pairs are English; for "
                f"language {code!r} give pairs: [[a, b], ...] or pairs: iat"
            )
        named_words = name not in ("iat", "iat_pairs")  # words from the catalog unless given
        if (a is None or b is None) and named_words and code not in table.index and not _reads_attributes(raw):
            a, b = a or (), b or ()
        if (a is None or b is None) and named_words:
            if code not in table.index:
                raise ConfigError(
                    f"{key}: language {code!r} is not in the catalog (biasdask languages); give its attribute "
                    "words a and b, or attributes: iat (a study of classic tests alone needs none with "
                    "save_scores: false)"
                )
            a = a or (str(table.loc[code, "male"]),)
            b = b or (str(table.loc[code, "female"]),)
        if name in ("iat", "iat_pairs"):
            a, b = _iat_words(name, str(code), source, key)
        metric_words = _set_metric_words(settings.get("set_metric_words"), f"{key}.set_metric_words")
        url = _language_source(source, str(code), settings, store)
        specs.append(LanguageSpec(str(code), store, a, b, name, metric_words or default_metric_words, url))
    _check_source_languages(source, specs)
    return tuple(specs)


def _iat_words(name: str, code: str, source: _Source, key: str) -> tuple[Any, Any]:
    """The IAT's male and female terms of ``code`` in the embedding's ``iat_model`` (``attributes: iat``),
    or their base pairs (``pairs: iat``)."""
    iat_model = source.iat_model
    if iat_model not in IAT_MODELS or code not in iat_languages(iat_model):
        where = "" if source.name is None else f" (embedding {source.name})"
        raise ConfigError(
            f"{key}: attributes {'iat' if name == 'iat' else 'pairs: iat'}: no IAT translations for "
            f"language {code!r} with iat_model {iat_model!r}{where} (available: "
            f"{list(iat_languages(iat_model)) if iat_model in IAT_MODELS else []})"
        )
    terms = iat_attribute_terms(iat_model, code)
    return _iat_pairs(terms) if name == "iat_pairs" else terms


def _reads_attributes(raw: dict) -> bool:
    """Whether the study reads its languages' attribute words: a full-vocabulary test (``gender``,
    ``context``), or the per-word scores saved (``save_scores``, of the ``gender`` test). A study of classic
    tests alone (WEAT, a word set file's tests) with ``save_scores: false`` reads none, so a language the
    catalog lacks needs none."""
    tests = raw.get("tests", ["gender"])
    tests = [tests] if isinstance(tests, str) else tests if isinstance(tests, list) else []
    return raw.get("save_scores", True) is not False or any(t in FULL_VOCABULARY_TESTS for t in tests)


def _language_source(source: _Source, code: str, settings: dict, store: Any) -> str | None:
    """The source of language ``code`` in one embedding: its ``source`` setting (with several embeddings a
    mapping of embedding name to URL), else the embedding's ``sources`` (a URL template with
    ``{language}``, or a mapping of language code to URL); None without one."""
    key, value = f"languages.{code}.source", settings.get("source")
    if source.name is not None and value is not None:
        if not isinstance(value, dict):
            raise ConfigError(
                f"{key}: the study has several embeddings ({', '.join(source.names)}): give a source per "
                f"embedding, {{{source.names[0]}: URL, ...}}"
            )
        unknown = [str(name) for name in value if name not in source.names]
        if unknown:
            raise ConfigError(f"{key}: no embedding {', '.join(unknown)} (embeddings: {', '.join(source.names)})")
        key, value = f"{key}.{source.name}", value.get(source.name)
    sources = source.sources
    if value is None and isinstance(sources, dict):
        key, value = f"{source.sources_key}.{code}", sources.get(code)
    elif value is None and sources is not None:
        if not isinstance(sources, str) or "{language}" not in sources:
            raise ConfigError(
                f"{source.sources_key}: expected a URL template containing '{{language}}' or a mapping of "
                "language code to URL"
            )
        key, value = source.sources_key, sources.replace("{language}", code)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key}: expected the path or URL of an embedding file, got {value!r}")
    if not isinstance(store, str):
        raise ConfigError(f"{key}: a source is ingested into a store URL (languages.{code}.store or embeddings)")
    protocol = fsspec.core.split_protocol(value)[0] or "file"
    try:
        storage_options_for(value, None)  # its file system's package is installed
        fsspec.get_filesystem_class(protocol)
    except (ImportError, BiasdaskError) as exc:
        raise ConfigError(f"{key}: {exc}") from None
    except ValueError:
        raise ConfigError(f"{key}: unknown protocol {protocol}:// in {display_url(value)}") from None
    return value


def _check_source_languages(source: _Source, specs: list[LanguageSpec]) -> None:
    """A ``sources`` mapping names languages of the (embedding's) study only."""
    if isinstance(source.sources, dict):
        codes = {s.code for s in specs}
        for code in source.sources:
            if str(code) not in codes:
                raise ConfigError(
                    f"{source.sources_key}.{code}: not a language of the study (languages: {', '.join(sorted(codes))})"
                )


def _ingest(raw: dict) -> IngestOptions:
    """``ingest: {format: auto, max_words: N, chunk_words: N, dim: N}``: how the sources are ingested."""
    value = raw.get("ingest") or {}
    if not isinstance(value, dict):
        raise ConfigError("ingest: expected a mapping {format: auto, max_words: N, chunk_words: N, dim: N}")
    unknown = set(value) - {"format", "max_words", "chunk_words", "dim"}
    if unknown:
        raise ConfigError(f"ingest: unknown key(s) {sorted(unknown)}; allowed: chunk_words, dim, format, max_words")
    input_format = value.get("format", "auto")
    if input_format not in ("auto", *FORMATS):
        raise ConfigError(f"ingest.format: {input_format!r} is not one of {['auto', *FORMATS]}")
    try:
        counts = {key: _int(value, key, None, 1, allow_none=True) for key in ("max_words", "chunk_words", "dim")}
    except ConfigError as exc:
        raise ConfigError(f"ingest.{exc}") from None
    return IngestOptions(input_format, **counts)


def _is_embedding_object(value: Any) -> bool:
    """An in-memory embedding given from Python (Dataset, DataArray, KeyedVectors-like)."""
    return isinstance(value, (xr.Dataset, xr.DataArray)) or (
        hasattr(value, "index_to_key") and hasattr(value, "vectors")
    )


def _store_label(store: Any) -> str:
    """A store URL as it is; an in-memory embedding as a content token (same vectors, same study digest)."""
    if isinstance(store, str):
        return store

    emb = as_embeddings(store)
    return f"in-memory:{tokenize(emb['vectors'].data, np.asarray(emb['word'].values))}"


def parse_config(raw: Any, *, output: str | None = None) -> StudyConfig | EmbeddingStudies:
    """Validate a study given as a mapping (e.g. parsed YAML).

    Parameters
    ----------
    raw
        The mapping.
    output
        Overrides the ``output`` key (the CLI's ``--output``).

    Returns
    -------
    StudyConfig or EmbeddingStudies
        The study; with ``embeddings`` a mapping of names, its several embeddings, each an ordinary
        study writing to ``<output>/<name>``.

    Raises
    ------
    ConfigError
        Naming the first offending key (for a file of ``word_sets``, the file and what is wrong in it).
    BiasdaskOSError
        A file of ``word_sets`` that cannot be read (the network, a timeout), named with its key.
    """
    if not isinstance(raw, dict):
        raise ConfigError("the study file must be a YAML mapping")
    unknown = set(raw) - _KEYS
    if unknown:
        raise ConfigError(f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_KEYS)}")
    out = output or raw.get("output")
    if not isinstance(out, str) or not out:
        raise ConfigError("output: expected the URL of the results store")
    options = _options(raw)
    studies = {source.name: _study(raw, out, source, options) for source in _sources(raw)}
    codes = list(dict.fromkeys(spec.code for study in studies.values() for spec in study.languages))
    word_sets = _word_sets(raw, codes, options["storage_options"])
    studies = {name: replace(study, word_sets=word_sets) for name, study in studies.items()}
    if None in studies:
        return studies[None]
    return EmbeddingStudies(out, {str(name): study for name, study in studies.items()}, options["storage_options"])


def _study(raw: dict, out: str, source: _Source, options: dict[str, Any]) -> StudyConfig:
    """The study of one embedding: its languages and stores, the study's other keys (``options``)."""
    languages = _languages(raw, source)
    unpaired = [s.code for s in languages if len(s.a) != len(s.b)]
    if "ripa" in options["associations"] and unpaired:
        raise ConfigError(
            f"associations: ripa pairs the i-th attribute word of A with the i-th of B, but a and b differ in "
            f"length in language(s) {', '.join(unpaired)}"
        )
    output = out if source.name is None else embedding_url(out, source.name)
    return StudyConfig(output=output, languages=languages, iat_model=source.iat_model, **options)


def _options(raw: dict) -> dict[str, Any]:
    """The study's keys shared by its embeddings, validated (all but output, embeddings, languages)."""
    alternative = raw.get("alternative", "two-sided")
    if alternative not in ALTERNATIVES:
        raise ConfigError(f"alternative: {alternative!r} is not one of {list(ALTERNATIVES)}")
    similarity = raw.get("similarity", "cosine")
    if similarity not in SIMILARITIES:
        raise ConfigError(f"similarity: {similarity!r} is not one of {list(SIMILARITIES)}")
    storage_options = raw.get("storage_options") or {}
    if not isinstance(storage_options, dict):
        raise ConfigError("storage_options: expected a mapping")
    resolve_env(storage_options, "storage_options")  # fail now, not after an hour of work
    iat_model = raw.get("iat_model", "cc")
    if iat_model not in IAT_MODELS:
        raise ConfigError(f"iat_model: {iat_model!r} is not one of {list(IAT_MODELS)}")
    exclude_words = raw.get("exclude_words") or []
    if isinstance(exclude_words, str):
        if exclude_words not in NAMED_WORD_LISTS:
            raise ConfigError(
                f"exclude_words: {exclude_words!r} is not a word list of the package {list(NAMED_WORD_LISTS)}; "
                "give a list of words"
            )
    elif not isinstance(exclude_words, list) or not all(isinstance(w, str) for w in exclude_words):
        raise ConfigError("exclude_words: expected a list of words or the name of a list (gender_specific)")
    return dict(
        methods=_choice_list(raw, "methods", ("uniform", "zipf"), METHODS),
        tests=_choice_list(raw, "tests", ("gender",), (*known_tests(), *_file_tests(raw))),
        n_permutations=_int(raw, "n_permutations", 9999, 1, maximum=MAX_PERMUTATIONS),
        seed=_int(raw, "seed", 0, 0),
        alternative=alternative,
        similarity=similarity,
        max_words=_int(raw, "max_words", None, 1, allow_none=True),
        exclude_attributes=_bool(raw, "exclude_attributes", False),
        exclude_words=exclude_words,
        dedupe_vectors=_bool(raw, "dedupe_vectors", False),
        batch_size=_int(raw, "batch_size", None, 1, allow_none=True),
        storage_options=storage_options,
        save_scores=_bool(raw, "save_scores", True),
        save_null=_bool(raw, "save_null", True),
        min_coverage=_fraction(raw, "min_coverage", 0.8),
        associations=_choice_list(raw, "associations", ("cosine",), ASSOCIATIONS),
        correction=_correction(raw),
        alpha=_alpha(raw),
        ci_level=_ci_level(raw),
        **_placebo(raw),
        ingest=_ingest(raw),
    )


def _file_tests(raw: dict) -> list[str]:
    """The labels of the tests the study's ``word_sets`` files define (:mod:`biasdask.study.wordsets`)."""
    named = raw.get("tests") or []
    return file_test_labels([named] if isinstance(named, str) else named, word_set_sources(raw, known_tests()))


def _word_sets(raw: dict, codes: list[str], storage_options: dict) -> dict[str, dict[str, WordSets]]:
    """The study's ``word_sets`` files read for the languages ``codes`` (last, once every other key is valid)."""
    return read_study_word_sets(
        word_set_sources(raw, known_tests()), _file_tests(raw), codes, resolve_env(storage_options, "storage_options")
    )


def load_config(path: str | Path, *, output: str | None = None) -> StudyConfig | EmbeddingStudies:
    """Read and validate a study YAML file.

    Returns
    -------
    StudyConfig or EmbeddingStudies
        As :func:`parse_config`.

    Raises
    ------
    ConfigError
        The file is missing, not UTF-8 (naming the byte offset), not valid YAML (naming the line and
        column, 1-based) or not a valid study (naming the key).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import biasdask
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "study.yaml"
    >>> _ = path.write_text("output: results.zarr\\nembeddings: emb/{language}.zarr\\nlanguages: [en, fr]\\n")
    >>> config = biasdask.load_config(path)
    >>> [(language.code, language.a, language.b) for language in config.languages]
    [('en', ('male',), ('female',)), ('fr', ('mâle',), ('femelle',))]
    >>> config.methods, config.alternative
    (('uniform', 'zipf'), 'two-sided')

    A study of two embeddings:

    >>> _ = path.write_text("output: results.zarr\\nembeddings:\\n  cc: cc/{language}.zarr\\n  wiki: wiki/{language}.zarr\\n"
    ...                     "languages: [en, fr]\\n")
    >>> studies = biasdask.load_config(path)
    >>> {name: (study.output, study.languages[1].store) for name, study in studies.studies.items()}
    {'cc': ('results.zarr/cc', 'cc/fr.zarr'), 'wiki': ('results.zarr/wiki', 'wiki/fr.zarr')}
    """
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such study file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a study file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r}); save the study file as UTF-8"
        ) from None
    try:
        raw = yaml.load(text, Loader=_StudyLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML{_yaml_where(exc)}{_template_hint(text, exc)}") from None
    return parse_config(raw, output=output)


class _StudyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (YAML would keep the last silently,
    e.g. a language listed twice under ``languages``)."""

    def construct_mapping(self, node, deep=False):
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice in one mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _yaml_where(exc: yaml.YAMLError) -> str:
    """`` at line L, column C: <problem>`` of a YAML error (1-based, as editors count)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or exc.__class__.__name__
    if mark is None:
        return f" ({problem})"
    return f" at line {mark.line + 1}, column {mark.column + 1}: {problem}"


def _template_hint(text: str, exc: yaml.YAMLError) -> str:
    """A hint when the YAML error's line holds an unquoted ``{language}`` or ``{test}`` template, which YAML
    reads as the start of a mapping inside ``{...}`` or ``[...]``."""
    mark = getattr(exc, "problem_mark", None)
    lines = text.splitlines()
    if mark is None or mark.line >= len(lines):
        return ""
    line = lines[mark.line]
    for template in ("{language}", "{test}"):
        at = line.find(template)
        if at >= 0 and "'" not in line[:at] and '"' not in line[:at]:
            return f' (inside {{...}} or [...] quote a value holding {template}: "...{template}...")'
    return ""


#: canonical keys whose change touches only the labels they name (languages, methods, tests,
#: associations, a test's word sets); a change of any other key changes every cell
_LABEL_KEYS = ("languages", "methods", "tests", "associations", "word_sets")


@dataclass(frozen=True)
class StudyChanges:
    """How a study differs from the one that wrote a results store (:func:`study_changes`).

    Attributes
    ----------
    keys : tuple of str
        Every changed key, dotted (``seed``, ``tests``, ``languages.fr.store``, ``languages.de``).
    global_keys : tuple of str
        The changed keys that change every cell (``seed``, ``n_permutations``, ...): only starting over
        (``overwrite``) applies them.
    changed_languages : frozenset of str
        Languages in both studies whose settings (store, attribute words) differ: their cells are
        recomputed.
    """

    keys: tuple[str, ...]
    global_keys: tuple[str, ...]
    changed_languages: frozenset[str]

    @property
    def updatable(self) -> bool:
        """Whether recomputing the affected cells only (``update``) applies the change."""
        return bool(self.keys) and not self.global_keys


def study_changes(old: dict[str, Any], new: dict[str, Any]) -> StudyChanges:
    """Compare two canonical studies (:meth:`StudyConfig.canonical`, or the ``config`` attr of a
    results store read as YAML).

    Examples
    --------
    >>> old = {"seed": 1, "tests": ["gender"], "languages": [{"code": "en", "store": "en.zarr"}]}
    >>> new = {"seed": 1, "tests": ["gender", "weat7"], "languages": [{"code": "en", "store": "en2.zarr"}]}
    >>> study_changes(old, new).keys
    ('languages.en.store', 'tests')
    """
    keys: list[str] = []
    global_keys: list[str] = []
    changed: set[str] = set()
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if key == "languages":
            before = {entry["code"]: entry for entry in a or []}
            after = {entry["code"]: entry for entry in b or []}
            language_keys: list[str] = []
            for code in sorted(set(before) | set(after)):
                if code not in before or code not in after:
                    language_keys.append(f"languages.{code}")
                    continue
                diff = [
                    f"languages.{code}.{k}"
                    for k in sorted(set(before[code]) | set(after[code]))
                    if before[code].get(k) != after[code].get(k)
                ]
                if diff:
                    language_keys += diff
                    changed.add(code)
            if not language_keys and [e["code"] for e in a or []] != [e["code"] for e in b or []]:
                language_keys.append("languages")  # the same languages in another order
            keys += language_keys
        elif key == "word_sets":  # a test's words: its cells
            keys += [f"word_sets.{label}" for label in changed_word_sets(a, b)]
        elif a != b:
            keys.append(key)
            if key not in _LABEL_KEYS:
                global_keys.append(key)
    return StudyChanges(tuple(keys), tuple(global_keys), frozenset(changed))
