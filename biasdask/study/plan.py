"""Planning a study, pure: no task, no read, no Dask.

- What a language still needs (:func:`plan_language`): cells written at once with a note (not
  applicable, no frequency list), *families* of full-vocabulary cells sharing splits, classic tests;
  decided from the config and the done cells alone.
- The seeds that make every cell a function of the study seed and its labels (:func:`cell_seed`,
  :func:`family_seed`).
- What the stream submits next (:class:`StreamPlanner`): which language starts, what a started language
  submits (:class:`LanguageWork`), how a family's permutations are cut into batches and how its tasks
  rank (:class:`FamilyWork`), when a language's per-word scores are complete; and which languages are
  still in flight. :mod:`biasdask.study.stream` does what it says.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import dask.config

from biasdask.engine.pools import KernelRate, batch_plan
from biasdask.engine.setmetrics import SET_METRICS, set_metric_sets
from biasdask.errors import BiasdaskError
from biasdask.io.results import FULL_VOCABULARY_TESTS, cube_label, split_label
from biasdask.lexicon import WordSets
from biasdask.stats.resampling import Resampling
from biasdask.study.cells import cell_word_sets, tests_for_language
from biasdask.study.config import LanguageSpec, StudyConfig

__all__ = [
    "PREPARE_FIRST",
    "ClassicWork",
    "FamilyWork",
    "LanguagePlan",
    "LanguageWork",
    "StreamPlanner",
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
    tests |= {label for label, per_language in cfg.word_sets.items() if language in per_language}
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
        (m, t, {"t_method": m, "u_association": split_label(t)[1], "note": _no_frequency_note(no_frequency)})
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


#: the most languages in flight by default (each holds its store opened, its graphs and futures in the
#: client, and its tasks in the scheduler); 64 keep 256 worker threads as busy as 157 did
#: (docs/benchmarks.md, many workers)
MAX_LANGUAGES_IN_FLIGHT = 64


def languages_in_flight(slots: int) -> int:
    """``biasdask.run.languages-in-flight``, or by default two languages per worker thread, at most
    :data:`MAX_LANGUAGES_IN_FLIGHT`: while the client builds one language's scores graph or writes its
    scores, the others keep the workers busy."""
    value = dask.config.get("biasdask.run.languages-in-flight", None)
    if value is None:
        return min(2 * max(1, slots), MAX_LANGUAGES_IN_FLIGHT)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BiasdaskError(f"biasdask.run.languages-in-flight: expected a positive integer or null, got {value!r}")
    return value


#: added to a language's priority for its reads, pools and scores writes, which so go before any
#: permutation batch (see :class:`StreamPlanner`)
PREPARE_FIRST = 1_000_000


@dataclass(frozen=True)
class ClassicWork:
    """One classic test of a language, one task: its result fills the cells of ``methods``."""

    test: str
    methods: tuple[str, ...]
    resampling: Resampling
    """Seeded by the test's ``uniform`` cell (:func:`cell_seed`)."""
    word_sets: str | WordSets
    """Where its word sets come from (:func:`biasdask.study.cells.cell_word_sets`); for a test of the
    study's ``word_sets`` files, the word sets themselves, read when the study was loaded (the task
    receives them: a worker needs no access to the files)."""


@dataclass(frozen=True)
class LanguageWork:
    """What the stream submits for a started language (:meth:`StreamPlanner.language_work`)."""

    notes: tuple[tuple[str, str, dict], ...]
    """Cells written at once: ``(method, test, values)``."""
    graphs: tuple[str, ...]
    """The full-vocabulary labels whose scores graph a thread of the client builds: the ``gender``
    associations (those with cells, or all when the scores are saved; cosine first), then ``context``'s."""
    classic: tuple[ClassicWork, ...]


@dataclass(frozen=True)
class FamilyWork:
    """How a family's tasks are cut and ranked (:meth:`StreamPlanner.family_work`)."""

    seed: int
    """Shared by its weightings (:func:`family_seed`): common splits."""
    ranges: tuple[tuple[int, int], ...]
    """Its batches: permutations [start, stop)."""
    priority: int
    """Of its batches and its last task: its language's."""
    pool_priority: int
    """Of its pool and placebo tasks: above its language's reads and scores write, so that on the worker
    that holds its scores the pool never waits behind their write."""


class StreamPlanner:
    """What a study's stream submits next, decided from what it was told (pure: tested without Dask).

    Languages start in the study's order, at most :func:`languages_in_flight` at a time (a language is in
    flight while tasks it submitted are). A language whose store a task is making from its source
    (``awaiting``) starts once it is made (:meth:`store_made`): the languages after it do not wait for it,
    and every store is made by its own task from the start (:meth:`stores_to_make`). A distributed scheduler runs the higher priority first among
    tasks ready at once: an earlier language's tasks go before a later one's, so cells are written while
    the later ones run, and every language's reads, pools and scores writes (priority raised by
    :data:`PREPARE_FIRST`) go before any permutation batch, so that the run's tail is short batches
    spread over the workers rather than a scores write running alone. A family's permutations are cut into
    batches of about ``biasdask.batch-duration`` at the workers' kernel rate, over its share of the worker
    threads: the threads over the families running or still to plan (this one included), holding at least
    four batches each. With many families, a few long batches each; the last family spreads over every
    thread. A permutation's split depends on the seed and its index, not on its batch: the cut changes no
    result.

    Parameters
    ----------
    cfg
        The study.
    slots
        Worker threads of the scheduler.
    rate
        The workers' kernel rate (:func:`biasdask.engine.permutation.kernel_rate`).
    awaiting
        The languages whose store is being made (:mod:`biasdask.study.sources`).
    """

    def __init__(self, cfg: StudyConfig, slots: int, rate: KernelRate, awaiting: Iterable[str] = ()) -> None:
        self.cfg, self.slots, self.rate = cfg, slots, rate
        self.limit = languages_in_flight(slots)
        self.waiting = list(cfg.languages)
        #: languages whose store a task is making: they wait for it, the others do not wait for them
        self.awaiting = [lang.code for lang in cfg.languages if lang.code in set(awaiting)]
        #: language -> tasks it submitted that the stream has not handled yet
        self.pending: dict[str, int] = {}
        #: full-vocabulary families not planned yet, by language (counted from the tests that apply
        #: until the language's plan says): with those running, they share the worker threads
        self.to_plan = {lang.code: sum(map(is_family, applicable_tests(cfg, lang.code))) for lang in cfg.languages}
        self.running: set[tuple[str, str]] = set()
        self.failures: list[str] = []
        self.priority = {lang.code: -2 * i for i, lang in enumerate(cfg.languages)}
        self.prepare = {code: PREPARE_FIRST + p for code, p in self.priority.items()}
        self._scores: dict[str, tuple[list[str], dict[str, Any]]] = {}

    # -- languages in flight -------------------------------------------------------------------

    def busy(self) -> bool:
        """Whether a language is still waiting (for its turn or its store) or in flight."""
        return bool(self.waiting or self.pending)

    def waits(self) -> bool:
        """Whether something the stream submitted is still to report: a task of a language in flight,
        or a store being made."""
        return bool(self.pending or self.awaiting)

    def next_language(self) -> LanguageSpec | None:
        """The next language to start, if fewer than the limit are in flight: the first in the study's
        order whose store is there (a language whose store is being made lets the next ones go first)."""
        if len(self.pending) >= self.limit:
            return None
        for i, lang in enumerate(self.waiting):
            if lang.code not in self.awaiting:
                return self.waiting.pop(i)
        return None

    # -- stores made from sources ------------------------------------------------------------------

    def stores_to_make(self) -> list[tuple[str, int]]:
        """The languages whose store is made, in the study's order, with the priority of the task that
        makes it: its language's reads' (:data:`PREPARE_FIRST` above its cells), so that a download
        starts before any permutation batch and an earlier language's before a later one's."""
        return [(code, self.prepare[code]) for code in self.awaiting]

    def store_made(self, code: str) -> None:
        """``code``'s store is complete: the language starts in its turn."""
        self.awaiting.remove(code)

    def store_failed(self, code: str, reason: object) -> None:
        """``code``'s store could not be made: the language stops here (:meth:`fail`), its cells not run."""
        self.awaiting.remove(code)
        self.waiting = [lang for lang in self.waiting if lang.code != code]
        self.fail(code, reason)

    def submitted(self, code: str, n: int = 1) -> None:
        """``n`` tasks of ``code`` submitted (negative: handled)."""
        self.pending[code] = self.pending.get(code, 0) + n
        self.settle(code)

    def settle(self, code: str) -> None:
        """``code`` leaves the languages in flight when none of its tasks is in flight."""
        if not self.pending.get(code):
            self.pending.pop(code, None)

    def fail(self, code: str, reason: object) -> None:
        """``code`` stops here: none of its families is left to plan, and the run's error names it."""
        self.to_plan.pop(code, None)
        line = f"{code}: {reason}"
        if line not in self.failures:
            self.failures.append(line)

    # -- what a language submits ---------------------------------------------------------------

    def language_work(self, lang: LanguageSpec, plan: LanguagePlan) -> LanguageWork | None:
        """What ``lang`` submits, from its plan (None: nothing to do)."""
        self.to_plan[lang.code] = len(plan.families)
        if plan.idle:
            return None
        cfg = self.cfg
        # One chunked pass per association (cosine's too when the scores are saved: the stored u and t
        # are cosine's, another association's are u_<name>, t_<name>).
        cosine = ("cosine",) if plan.need_scores else ()
        gender = [cube_label("gender", a) for a in dict.fromkeys((*cosine, *cfg.associations))]
        if plan.need_scores:
            self._scores[lang.code] = (gender, {})
        graphs = [label for label in gender if label in plan.families or plan.need_scores]
        graphs += [label for label in plan.families if split_label(label).test == "context"]
        classic = tuple(
            ClassicWork(
                test,
                tuple(methods),
                Resampling(
                    n_permutations=cfg.n_permutations,
                    alternative=cfg.alternative,
                    seed=cell_seed(cfg.seed, lang.code, "uniform", test),
                    batch_size=cfg.batch_size,
                    placebo=cfg.placebo or None,
                    placebo_exclude=cfg.placebo_exclude,
                    placebo_words=cfg.placebo_match.words,
                    placebo_rank_ratio=cfg.placebo_match.rank_ratio,
                    placebo_min_candidates=cfg.placebo_match.min_candidates,
                ),
                cfg.word_sets[test][lang.code]
                if test in cfg.word_sets
                else cell_word_sets(test, lang.code, iat_model=cfg.iat_model, set_metric_words=lang.set_metric_words),
            )
            for test, methods in plan.classic.items()
        )
        return LanguageWork(plan.notes, tuple(graphs), classic)

    def family_work(self, code: str, label: str, n_words: int, n_methods: int) -> FamilyWork:
        """How the family ``label`` of ``code`` is cut and ranked: ``n_words`` at most in its pool,
        ``n_methods`` weightings evaluated on each split. The family then counts as running."""
        families_left = len(self.running) + sum(self.to_plan.values())  # this one among those to plan
        self.to_plan[code] = max(0, self.to_plan.get(code, 0) - 1)
        spread = -(-2 * self.slots // max(1, families_left))
        cfg = self.cfg
        ranges = batch_plan(n_words * n_methods, cfg.n_permutations, cfg.batch_size, spread, self.rate)
        self.running.add((code, label))
        return FamilyWork(
            family_seed(cfg.seed, code, label), tuple(ranges), self.priority[code], self.prepare[code] + 1
        )

    def family_done(self, code: str, label: str) -> None:
        """The family ``label`` of ``code`` has ended."""
        self.running.discard((code, label))

    def scores_part(self, code: str, label: str, part: Any) -> dict[str, Any] | None:
        """Collect one association's scores (None: it failed, and is not waited for); return every
        expected association's, in the study's order, once the last arrives (None until then, and for a
        language whose scores are not saved)."""
        if code not in self._scores:
            return None
        expected, got = self._scores[code]
        if part is None:
            expected.remove(label)
        else:
            got[label] = part
        if len(got) < len(expected):
            return None
        del self._scores[code]
        return {label: got[label] for label in expected}
