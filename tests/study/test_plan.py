"""Planning a study, without Dask: what each language needs, and what the stream submits next."""

from __future__ import annotations

import dask
import pytest

from biasdask.engine.pools import KernelRate, batch_plan
from biasdask.errors import BiasdaskError
from biasdask.study.config import parse_config
from biasdask.study.plan import (
    PREPARE_FIRST,
    StreamPlanner,
    cell_seed,
    family_seed,
    languages_in_flight,
    plan_language,
)

RATE = KernelRate(per_permutation=2e-6, per_value=3e-10)


def _config(codes=("en", "de", "fr"), **extra):
    return parse_config(
        {
            "output": "memory://plan.zarr",
            "languages": {code: {"store": f"memory://{code}.zarr"} for code in codes},
            "methods": ["uniform", "zipf"],
            "tests": ["gender"],
            "n_permutations": 1000,
            "seed": 7,
            **extra,
        }
    )


def test_plan_language_is_pure_and_sorts_the_cells():
    cfg = parse_config(
        {
            "output": "memory://plan.zarr",
            "languages": {"eu": {"store": "memory://eu.zarr", "a": ["gizon"], "b": ["emakume"]}},
            "methods": ["uniform", "zipf", "frequency"],
            "tests": ["gender", "weat7", "career_family"],
        }
    )
    plan = plan_language(
        cfg,
        "eu",
        {("eu", "zipf", "gender")},
        need_scores=True,
        applicable={"gender", "career_family"},
        no_frequency="wordfreq has no observed-frequency list for language 'eu'",
    )
    assert plan.families == {"gender": ("uniform",)}
    assert plan.classic == {"career_family": ("uniform", "zipf", "frequency")}
    notes = {(m, t): v["note"] for m, t, v in plan.notes}
    assert set(notes) == {("uniform", "weat7"), ("zipf", "weat7"), ("frequency", "weat7"), ("frequency", "gender")}
    assert notes[("frequency", "gender")] == (
        "no observed-frequency weights (wordfreq has no observed-frequency list for language 'eu'), "
        "so the 'frequency' weighting cannot be computed"
    )
    assert plan.score_methods == ("uniform", "zipf") and plan.need_scores
    done = {("eu", m, t) for m in cfg.methods for t in cfg.tests}
    assert plan_language(cfg, "eu", done, need_scores=False, applicable={"gender"}).idle


def test_languages_in_flight_comes_from_dask_config():
    assert languages_in_flight(1) == 2 and languages_in_flight(10) == 20
    # a bounded number, whatever the cluster's size
    assert languages_in_flight(32) == languages_in_flight(256) == 64
    with dask.config.set({"biasdask.run.languages-in-flight": 3}):
        assert languages_in_flight(40) == 3
    with dask.config.set({"biasdask.run.languages-in-flight": 0}), pytest.raises(BiasdaskError):
        languages_in_flight(4)


def test_languages_start_in_the_study_order_up_to_the_limit_and_the_next_as_one_ends():
    planner = StreamPlanner(_config(), slots=1, rate=RATE)  # two languages per thread
    assert planner.limit == 2
    en = planner.next_language()
    planner.submitted(en.code, 3)
    de = planner.next_language()
    planner.submitted(de.code)
    assert (en.code, de.code) == ("en", "de") and planner.next_language() is None
    planner.submitted("de", -1)  # de's last task handled: fr may start
    assert planner.next_language().code == "fr" and planner.busy()


def test_a_language_that_submitted_nothing_is_not_in_flight():
    """A language whose cells are only notes (no test applies, scores not saved) leaves the stream at
    once: the loop waits on nothing for it."""
    planner = StreamPlanner(_config(codes=("en",)), slots=1, rate=RATE)
    assert planner.next_language().code == "en"
    planner.submitted("en")  # the task finding its words
    planner.submitted("en", -1)  # handled: its plan writes notes only and submits nothing
    planner.settle("en")
    assert not planner.busy() and planner.pending == {}


def test_a_language_submits_its_graphs_cosine_first_and_its_classic_cells_seeded_by_their_uniform_cell():
    cfg = _config(codes=("en",), tests=["gender", "weat7", "context"], associations=["ripa", "cosine"])
    planner = StreamPlanner(cfg, slots=2, rate=RATE)
    lang = planner.next_language()
    plan = plan_language(cfg, "en", set(), need_scores=True, applicable=set(cfg.test_labels()))
    work = planner.language_work(lang, plan)
    assert work.graphs == ("gender", "gender.ripa", "context.ripa", "context")
    (weat7,) = work.classic
    assert weat7.test == "weat7" and weat7.methods == ("uniform", "zipf") and weat7.word_sets == "weat7"
    assert weat7.resampling.seed == cell_seed(7, "en", "uniform", "weat7") and weat7.resampling.n_permutations == 1000
    assert planner.to_plan["en"] == 4
    idle = plan_language(
        cfg,
        "en",
        {("en", m, t) for m in cfg.methods for t in cfg.test_labels()},
        need_scores=False,
        applicable=set(cfg.test_labels()),
    )
    assert planner.language_work(lang, idle) is None


def test_a_family_spreads_over_its_share_of_the_threads_and_ranks_its_pool_above_its_batches():
    """Three threads (six slots), two families to plan: the first family's batches are spread over half
    the slots; the second, planned once the first has ended, over all of them."""
    cfg = _config(codes=("en", "de"), methods=["uniform"])
    planner = StreamPlanner(cfg, slots=3, rate=RATE)
    for code in ("en", "de"):
        plan = plan_language(cfg, code, set(), need_scores=False, applicable={"gender"})
        planner.language_work(planner.next_language(), plan)
    with dask.config.set({"biasdask.min-batch-duration": "0s"}):
        first = planner.family_work("en", "gender", 50_000, 1)
        assert first.ranges == tuple(batch_plan(50_000, 1000, None, 3, RATE))
        assert first.seed == family_seed(7, "en", "gender")
        assert first.pool_priority == PREPARE_FIRST + first.priority + 1 > first.priority == 0
        planner.family_done("en", "gender")
        second = planner.family_work("de", "gender", 50_000, 1)
        assert second.ranges == tuple(batch_plan(50_000, 1000, None, 6, RATE))
    assert second.priority == -2 and len(second.ranges) > len(first.ranges)


def test_a_languages_scores_are_written_once_every_association_is_in_in_the_study_order():
    cfg = _config(codes=("en",), associations=["ripa", "cosine", "semaxis"])
    planner = StreamPlanner(cfg, slots=1, rate=RATE)
    lang = planner.next_language()
    planner.language_work(lang, plan_language(cfg, "en", set(), need_scores=True, applicable={"gender"}))
    assert planner.scores_part("en", "gender.semaxis", "s") is None
    assert planner.scores_part("en", "gender.ripa", None) is None  # failed: not waited for
    assert planner.scores_part("en", "gender", "c") == {"gender": "c", "gender.semaxis": "s"}
    assert planner.scores_part("en", "gender", "again") is None  # written once


def test_a_failed_language_is_named_once_and_plans_no_more_families():
    planner = StreamPlanner(_config(), slots=1, rate=RATE)
    planner.fail("de", "no usable word")
    planner.fail("de", "no usable word")
    assert planner.failures == ["de: no usable word"] and "de" not in planner.to_plan


def test_a_language_waits_for_its_store_alone_and_its_failure_stops_it_only():
    """Stores made from sources: every one asked for at once, earlier languages first and above any
    permutation batch; a language starts once its store is made, the others do not wait for it."""
    planner = StreamPlanner(_config(codes=("en", "de", "fr", "es")), slots=1, rate=RATE, awaiting=["fr", "en"])
    made = planner.stores_to_make()
    assert [code for code, _ in made] == ["en", "fr"]  # in the study's order
    assert made[0][1] > made[1][1] > planner.priority["en"]  # above every language's batches
    assert made[0][1] == planner.prepare["en"]
    de = planner.next_language()  # en waits for its store: de goes first
    assert de.code == "de" and planner.waits() and planner.busy()
    planner.submitted("de")
    assert planner.next_language().code == "es"
    planner.submitted("es")
    planner.store_made("en")
    assert planner.next_language() is None  # made, but two languages are in flight (the limit)
    planner.submitted("de", -1)
    assert planner.next_language().code == "en"
    planner.store_failed("fr", "http://h/cc.fr.vec.gz: no such file")
    assert planner.failures == ["fr: http://h/cc.fr.vec.gz: no such file"] and "fr" not in planner.to_plan
    assert [lang.code for lang in planner.waiting] == [] and planner.awaiting == []
    planner.submitted("es", -1)
    assert not planner.busy() and not planner.waits()
