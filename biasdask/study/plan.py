"""Planning a study, pure: which cells each language still needs and how they group (notes written at
once, full-vocabulary families sharing splits, classic tests), and the seeds that make every cell a
function of the study seed and its labels. Decided from the config and the done cells alone (no task,
no read): :mod:`biasdask.study.run` streams the plan.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import dask.config

from biasdask.engine.setmetrics import SET_METRICS, set_metric_sets
from biasdask.errors import BiasdaskError
from biasdask.io.results import FULL_VOCABULARY_TESTS, split_label
from biasdask.study.cells import tests_for_language
from biasdask.study.config import StudyConfig

__all__ = [
    "LanguagePlan",
    "applicable_tests",
    "cell_seed",
    "family_seed",
    "is_family",
    "languages_in_flight",
    "plan_language",
]


def cell_seed(seed: int, language: str, method: str, test: str) -> int:
    """The seed of one cell: a hash of the study seed and the cell's labels (stable across runs)."""
    digest = hashlib.sha256(f"{seed}/{language}/{method}/{test}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def family_seed(seed: int, language: str, test: str) -> int:
    """The seed shared by every weighting of a test in a language: its ``uniform`` cell's
    (:func:`cell_seed`), so that the weightings are evaluated on common splits."""
    return cell_seed(seed, language, "uniform", test)


def applicable_tests(cfg: StudyConfig, language: str) -> set[str]:
    """The tests of the study that apply to ``language`` (the others are written as not applicable)."""

    tests = {"gender"} | set(tests_for_language(language, cfg.iat_model))
    named = next((s.set_metric_words for s in cfg.languages if s.code == language), None)
    if named is not None or set_metric_sets(language, cfg.iat_model) is not None:
        tests |= set(SET_METRICS)
    if language == "en":
        tests.add("context")
    return {label for label in cfg.test_labels() if split_label(label)[0] in tests}


def is_family(label: str) -> bool:
    """Whether the cube's test ``label`` is a full-vocabulary test (``gender``, ``context.ripa``...):
    its weightings share splits (one pool, one seed: :func:`family_seed`)."""
    return split_label(label)[0] in FULL_VOCABULARY_TESTS


def _no_frequency_note(reason: str) -> str:
    return f"no observed-frequency weights ({reason}), so the 'frequency' weighting cannot be computed"


@dataclass(frozen=True)
class LanguagePlan:
    """The work of one language of a study (see :func:`plan_language`).

    Attributes
    ----------
    code
        The language.
    notes
        Cells written at once, without computing: ``(method, test, values)``.
    families
        Full-vocabulary test label (:func:`is_family`) -> the weightings whose cells are computed (on
        common splits).
    classic
        Classic test -> the methods whose cells its one result fills.
    need_scores
        Whether the per-word scores are still to be written (``save_scores``).
    score_methods
        The weightings of the language's scores: the study's, less those it cannot have.
    """

    code: str
    notes: tuple[tuple[str, str, dict], ...] = ()
    families: dict[str, tuple[str, ...]] = field(default_factory=dict)
    classic: dict[str, tuple[str, ...]] = field(default_factory=dict)
    need_scores: bool = False
    score_methods: tuple[str, ...] = ()

    @property
    def idle(self) -> bool:
        """Nothing to do (every cell done, scores written)."""
        return not (self.notes or self.families or self.classic or self.need_scores)


def plan_language(
    cfg: StudyConfig,
    code: str,
    done: set[tuple[str, str, str]],
    *,
    need_scores: bool,
    applicable: set[str],
    no_frequency: str | None = None,
) -> LanguagePlan:
    """The cells of ``code`` not in ``done``, sorted into notes, permutation families and classic tests.

    Parameters
    ----------
    cfg
        The study.
    code
        The language.
    done
        Cells already written (skipped).
    need_scores
        Whether the language's scores are still to be written.
    applicable
        The study's tests that apply to the language (:func:`applicable_tests`); the others get a note.
    no_frequency
        Why the language's words have no observed frequencies
        (:func:`~biasdask.engine.scores.frequency_unavailable`), or None; with a reason, the
        ``frequency`` cells of the weighted tests get a note that gives it.
    """
    todo = [(m, t) for m in cfg.methods for t in cfg.test_labels() if (code, m, t) not in done]
    notes = [
        (m, t, {"note": f"not applicable: test {t} has no word lists for language {code}"})
        for m, t in todo
        if t not in applicable
    ]
    todo = [(m, t) for m, t in todo if t in applicable]
    unusable = set() if no_frequency is None else {"frequency"}
    notes += [
        (m, t, {"weighting": m, "u_association": split_label(t)[1], "note": _no_frequency_note(no_frequency)})
        for m, t in todo
        if m in unusable and is_family(t)
    ]
    todo = [(m, t) for m, t in todo if not (m in unusable and is_family(t))]
    labels = dict.fromkeys(t for _, t in todo)
    families = {f: tuple(m for m, t in todo if t == f) for f in labels if is_family(f)}
    classic = {t: tuple(m for m, tt in todo if tt == t) for t in labels if not is_family(t)}
    return LanguagePlan(
        code=code,
        notes=tuple(notes),
        families={f: ms for f, ms in families.items() if ms},
        classic=classic,
        need_scores=need_scores,
        score_methods=tuple(m for m in cfg.methods if m not in unusable),
    )


def languages_in_flight(slots: int) -> int:
    """``biasdask.run.languages-in-flight``, or by default two languages per worker thread: while the
    client builds one language's scores graph or writes its scores, the others keep the workers busy."""
    value = dask.config.get("biasdask.run.languages-in-flight", None)
    if value is None:
        return 2 * max(1, slots)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BiasdaskError(f"biasdask.run.languages-in-flight: expected a positive integer or null, got {value!r}")
    return value
