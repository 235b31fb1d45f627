"""The study file: one YAML document describing a whole run (languages × methods × tests).

Example::

    output: s3://my-bucket/results/gender.zarr
    embeddings: s3://my-bucket/emb/{language}.zarr     # store of each language (a template)
    languages: [ar, de, en, zh]                       # or a mapping, see below
    methods: [uniform, zipf]
    tests: [gender]
    n_permutations: 9999
    seed: 20240601
    min_coverage: 0.8            # classic tests: skip a test whose word set is found below 80 %
    iat_model: cc                # career_family translations: cc | wiki | subt
    alternative: auto
    storage_options:                                  # fsspec options of every URL
      endpoint_url: https://s3.example.org
      key: ${AWS_ACCESS_KEY_ID}                       # read from the environment at run time
      secret: ${AWS_SECRET_ACCESS_KEY}

Tests: ``gender`` (seed 000's full-vocabulary test), ``context`` (seed 003's context words, English),
``weat1``..``weat10`` (English), ``xweat1``..``xweat10`` (de, es, hr, it, ru, tr) and ``career_family``
(languages with IAT translations). Each language runs the tests that apply to it; the other cells are
written as "not applicable" (NaN, with a ``note``). Classic tests have no weighting: their values are
the same in every ``method`` cell.

``languages`` may also map codes to settings: ``{en: {store: ..., a: [male, man], b: [female, woman]}}``.
Attribute words default to the catalog of ``biasdask languages`` (seed 000: the translations of *male*
and *female*). Validation happens before any work starts and every error names the offending key.
Credentials are only ever referenced (``${VAR}``); their values are resolved when a store is opened
and never written to the results store or the log.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from biasdask.errors import ConfigError
from biasdask.stats.permutation import MAX_PERMUTATIONS
from biasdask.stats.weights import METHODS

ALTERNATIVES = ("auto", "greater", "less", "two-sided")
SIMILARITIES = ("cosine", "euclidean")
IAT_MODELS = ("cc", "wiki", "subt")
_ENV_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_KEYS = {
    "output", "embeddings", "languages", "methods", "tests", "n_permutations", "seed", "alternative",
    "similarity", "max_words", "exclude_attributes", "exclude_words", "batch_size", "storage_options",
    "save_scores", "save_null", "min_coverage", "iat_model",
}


def known_tests() -> tuple[str, ...]:
    """Every test label a study may name: ``gender`` (seed 000), ``context`` (seed 003) and the classic
    tests of the lexicon (``weat1``..``weat10``, ``xweat1``..``xweat10``, ``career_family``)."""
    from biasdask.lexicon import available_tests

    return ("gender", "context", *available_tests())


@dataclass(frozen=True)
class LanguageSpec:
    """One language of a study: its code, embedding store and attribute words."""

    code: str
    store: str
    a: tuple[str, ...]
    b: tuple[str, ...]


@dataclass(frozen=True)
class StudyConfig:
    """A validated study (see the module docstring for the YAML form)."""

    output: str
    languages: tuple[LanguageSpec, ...]
    methods: tuple[str, ...] = ("uniform", "zipf")
    tests: tuple[str, ...] = ("gender",)
    n_permutations: int = 9999
    seed: int = 0
    alternative: str = "auto"
    similarity: str = "cosine"
    max_words: int | None = None
    exclude_attributes: bool = False
    exclude_words: tuple[str, ...] = ()
    batch_size: int | None = None
    storage_options: dict[str, Any] = field(default_factory=dict)
    save_scores: bool = True
    save_null: bool = True
    min_coverage: float = 0.8
    iat_model: str = "cc"

    def canonical(self) -> dict[str, Any]:
        """Everything that determines the results (not where they go, nor credentials)."""
        d = asdict(self)
        for volatile in ("output", "storage_options", "batch_size", "save_scores", "save_null"):
            d.pop(volatile)
        d["languages"] = [
            {"code": s.code, "store": s.store, "a": list(s.a), "b": list(s.b)} for s in self.languages
        ]
        for key in ("methods", "tests", "exclude_words"):
            d[key] = list(d[key])
        return d

    def canonical_yaml(self) -> str:
        """The canonical form as YAML text (stored in the results' ``config`` attribute)."""
        return yaml.safe_dump(self.canonical(), sort_keys=True, allow_unicode=True)

    def digest(self) -> str:
        """SHA-256 of :meth:`canonical_yaml`: two configs with the same digest give the same cube."""
        return hashlib.sha256(self.canonical_yaml().encode()).hexdigest()

    def resolved_storage_options(self) -> dict[str, Any]:
        """``storage_options`` with ``${VAR}`` references replaced by the environment's values."""
        return resolve_env(self.storage_options, "storage_options")


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
        raise ConfigError(f"{key}: expected a list of words, got the string {value!r} (write [{value}] for one word)")
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


def _languages(raw: dict) -> tuple[LanguageSpec, ...]:
    from biasdask.io.store import check_language_code
    from biasdask.lexicon import languages as catalog

    entries = raw.get("languages")
    if isinstance(entries, list):
        entries = {code: {} for code in entries}
    if not isinstance(entries, dict) or not entries:
        raise ConfigError("languages: expected a non-empty list of codes or a mapping of code to settings")
    template = raw.get("embeddings")
    if template is not None and (not isinstance(template, str) or "{language}" not in template):
        raise ConfigError("embeddings: expected a URL template containing '{language}'")
    table = catalog().set_index("code")
    specs = []
    for code, settings in entries.items():
        key = f"languages.{code}"
        try:
            check_language_code(str(code))
        except Exception as exc:
            raise ConfigError(f"{key}: {exc}") from None
        if isinstance(settings, str):
            settings = {"store": settings}
        if settings is None:
            settings = {}
        if not isinstance(settings, dict):
            raise ConfigError(f"{key}: expected a store URL or a mapping with store, a, b")
        extra = set(settings) - {"store", "a", "b"}
        if extra:
            raise ConfigError(f"{key}: unknown key(s) {sorted(extra)}; allowed: store, a, b")
        try:
            store = settings.get("store") or (template.format(language=code) if template else None)
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(f"embeddings: the template {template!r} has a bad field ({exc}); only {{language}} is filled in") from None
        if not isinstance(store, str):
            raise ConfigError(f"{key}.store: no store URL (give one, or an 'embeddings' template)")
        if ("a" not in settings or "b" not in settings) and code not in table.index:
            raise ConfigError(
                f"{key}: language {code!r} is not in the catalog (biasdask languages); give its attribute words a and b"
            )
        a = _words(settings["a"], f"{key}.a") if "a" in settings else (str(table.loc[code, "male"]),)
        b = _words(settings["b"], f"{key}.b") if "b" in settings else (str(table.loc[code, "female"]),)
        specs.append(LanguageSpec(str(code), store, a, b))
    return tuple(specs)


def parse_config(raw: Any, *, output: str | None = None) -> StudyConfig:
    """Validate a study given as a mapping (e.g. parsed YAML).

    Parameters
    ----------
    raw
        The mapping.
    output
        Overrides the ``output`` key (the CLI's ``--output``).

    Raises
    ------
    ConfigError
        Naming the first offending key.
    """
    if not isinstance(raw, dict):
        raise ConfigError("the study file must be a YAML mapping")
    unknown = set(raw) - _KEYS
    if unknown:
        raise ConfigError(f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_KEYS)}")
    out = output or raw.get("output")
    if not isinstance(out, str) or not out:
        raise ConfigError("output: expected the URL of the results store")
    alternative = raw.get("alternative", "auto")
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
    if not isinstance(exclude_words, list) or not all(isinstance(w, str) for w in exclude_words):
        raise ConfigError("exclude_words: expected a list of words")
    return StudyConfig(
        output=out,
        languages=_languages(raw),
        methods=_choice_list(raw, "methods", ("uniform", "zipf"), METHODS),
        tests=_choice_list(raw, "tests", ("gender",), known_tests()),
        n_permutations=_int(raw, "n_permutations", 9999, 1, maximum=MAX_PERMUTATIONS),
        seed=_int(raw, "seed", 0, 0),
        alternative=alternative,
        similarity=similarity,
        max_words=_int(raw, "max_words", None, 1, allow_none=True),
        exclude_attributes=_bool(raw, "exclude_attributes", False),
        exclude_words=tuple(exclude_words),
        batch_size=_int(raw, "batch_size", None, 1, allow_none=True),
        storage_options=storage_options,
        save_scores=_bool(raw, "save_scores", True),
        save_null=_bool(raw, "save_null", True),
        min_coverage=_fraction(raw, "min_coverage", 0.8),
        iat_model=iat_model,
    )


def load_config(path: str | Path, *, output: str | None = None) -> StudyConfig:
    """Read and validate a study YAML file."""
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such study file") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc.__class__.__name__})") from None
    return parse_config(raw, output=output)
