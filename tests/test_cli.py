"""Every ``biasdask`` subcommand: its happy path on a small study, and one failure each.

The commands run in this process through :func:`biasdask.cli.main` (what the console script calls), on two
small generated languages ingested once per module. A failure must end in one line on stderr, starting
``biasdask: error:`` and naming what is wrong, with exit code 2 (argparse's own usage errors: 2 as well).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from biasdask.cli import main
from biasdask.lexicon import weat_test
from tests.stores import write_vec

ATTRIBUTES = {"a": ["male", "man"], "b": ["female", "woman"]}


def _write_vec(path: Path, words: list[str], seed: int, dim: int = 12) -> None:
    write_vec(path, words, np.random.default_rng(seed).standard_normal((len(words), dim)))


LETTERS = str.maketrans("0123456789", "abcdefghij")


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("biasdask: error: "), err
    return lines[0]


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict:
    """Two languages ingested and run through the CLI once: en (with WEAT 7's words) and de."""
    root = tmp_path_factory.mktemp("cli")
    w7 = weat_test(7)
    common = [*ATTRIBUTES["a"], *ATTRIBUTES["b"]]
    filler = [f"w{i}".translate(LETTERS) for i in range(600)]  # word-like: a placebo may draw them
    en_words = list(dict.fromkeys([*common, *w7.x, *w7.y, *w7.a, *w7.b, *filler]))
    _write_vec(root / "en.vec", en_words, seed=1)
    _write_vec(root / "de.vec", [*common, *filler], seed=2)
    for code in ("en", "de"):
        assert main(["ingest", str(root / f"{code}.vec"), "-o", str(root / f"{code}.zarr"), "--language", code]) == 0
    config = {
        "output": str(root / "results.zarr"),
        "languages": {code: {"store": str(root / f"{code}.zarr"), **ATTRIBUTES} for code in ("en", "de")},
        "methods": ["uniform", "zipf"],
        "tests": ["gender", "weat7"],
        "n_permutations": 99,
        "placebo": {"n": 50},
        "seed": 3,
    }
    (root / "study.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["run", str(root / "study.yaml"), "--workers", "1", "--quiet"]) == 0
    return {
        "root": root,
        "results": root / "results.zarr",
        "en": root / "en.zarr",
        "study": root / "study.yaml",
        "n_en": len(en_words),
    }


def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("biasdask ")
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    out = capsys.readouterr().out
    for command in SUBCOMMANDS:
        assert command in out


def test_an_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as done:
        main(["frobnicate"])
    assert done.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_ingest_writes_a_store(study):
    ds = xr.open_zarr(study["en"], consolidated=False)
    assert ds.sizes["word"] == study["n_en"] == 632  # WEAT 7's words (male, man, ... among them) and the fillers
    assert ds.attrs["language"] == "en"


def test_ingest_of_a_missing_file_names_it(tmp_path, capsys):
    assert main(["ingest", str(tmp_path / "absent.vec"), "-o", str(tmp_path / "x.zarr"), "--language", "en"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "absent.vec" in line
    assert not (tmp_path / "x.zarr").exists()


def test_run_wrote_every_cell(study):
    ds = xr.open_zarr(study["results"], consolidated=False)
    assert dict(ds.sizes) == {"language": 2, "method": 2, "test": 2}
    gender = ds.sel({"test": "gender"})
    assert np.isfinite(gender["p_value"]).all()
    assert np.isfinite(gender["p_value_placebo"]).all()
    assert ds.sel({"language": "de", "test": "weat7"})["note"].values[0].startswith("not applicable")


def test_run_of_a_study_with_an_unknown_key_names_the_key(tmp_path, study, capsys):
    config = yaml.safe_load(study["study"].read_text())
    config["output"] = str(tmp_path / "r.zarr")
    config["n_permutation"] = 5
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(config))
    assert main(["run", str(tmp_path / "bad.yaml")]) == 2
    assert "n_permutation" in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "r.zarr").exists()


def test_show_in_every_format(study, capsys):
    assert main(["show", str(study["results"])]) == 0
    table = capsys.readouterr().out
    assert "gender" in table and "weat7" in table
    assert main(["show", str(study["results"]), "--format", "json", "--sel", "language=en", "test=gender"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {row["method"] for row in rows} == {"uniform", "zipf"}
    assert main(["show", str(study["results"]), "--format", "latex", "--columns", "d,p"]) == 0
    assert "\\toprule" in capsys.readouterr().out


def test_show_of_a_missing_store_names_it(tmp_path, capsys):
    assert main(["show", str(tmp_path / "nothing.zarr")]) == 2
    assert "nothing.zarr" in _one_error_line(capsys.readouterr().err)


def test_words_lists_both_sides(study, capsys):
    assert main(["words", str(study["results"]), "en", "-n", "3", "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("side,")
    assert len(out) == 1 + 2 * 3, "\n".join(out)  # one header, three words a side, no blank line


def test_words_of_a_language_not_in_the_study(study, capsys):
    assert main(["words", str(study["results"]), "fr"]) == 2
    assert "fr" in _one_error_line(capsys.readouterr().err)


def test_plot_writes_figures(study, tmp_path, capsys):
    assert main(["plot", str(study["results"]), "--output", str(tmp_path / "figures")]) == 0
    written = sorted(p.name for p in (tmp_path / "figures").glob("*.png"))
    assert "overview.png" in written
    assert all((tmp_path / "figures" / name).stat().st_size > 1000 for name in written)


def test_plot_of_a_cell_not_in_the_study(study, tmp_path, capsys):
    assert main(["plot", str(study["results"]), "--output", str(tmp_path), "--cell", "fr,zipf,gender"]) == 2
    assert "fr" in _one_error_line(capsys.readouterr().err)


def test_report_writes_one_page(study, tmp_path, capsys):
    assert main(["report", str(study["results"]), "--output", str(tmp_path / "site")]) == 0
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "<table" in page and "gender" in page


def test_report_of_a_missing_store(tmp_path, capsys):
    assert main(["report", str(tmp_path / "none.zarr"), "--output", str(tmp_path / "site")]) == 2
    assert "none.zarr" in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "site" / "index.html").exists()


def test_meta_pools_the_languages(study, tmp_path, capsys):
    assert main(["meta", str(study["results"]), "--test", "gender", "--output", str(tmp_path / "forest.png")]) == 0
    out = capsys.readouterr().out
    assert "de" in out and "en" in out
    assert (tmp_path / "forest.png").stat().st_size > 1000


def test_meta_of_an_unknown_test(study, capsys):
    assert main(["meta", str(study["results"]), "--test", "weat99"]) == 2
    assert "weat99" in _one_error_line(capsys.readouterr().err)


def test_debias_writes_a_new_store(study, tmp_path, capsys):
    dest = tmp_path / "en-proj.zarr"
    args = [
        "debias",
        str(study["en"]),
        "-o",
        str(dest),
        "--algorithm",
        "project",
        "--a",
        "male,man",
        "--b",
        "female,woman",
    ]
    assert main(args) == 0
    after = xr.open_zarr(dest, consolidated=False)
    g = np.asarray(after.attrs["debias_direction"])
    assert np.abs(after["vectors"].values @ g).max() < 1e-5


def test_debias_onto_its_own_source_is_refused(study, capsys):
    args = [
        "debias",
        str(study["en"]),
        "-o",
        str(study["en"]),
        "--algorithm",
        "project",
        "--a",
        "male",
        "--b",
        "female",
    ]
    assert main(args) == 2
    _one_error_line(capsys.readouterr().err)
    assert xr.open_zarr(study["en"], consolidated=False).sizes["word"] == study["n_en"]  # untouched


def test_languages_lists_the_catalog(capsys):
    assert main(["languages"]) == 0
    out = capsys.readouterr().out
    assert "fr" in out and "mâle" in out


def test_languages_with_an_unknown_option(capsys):
    with pytest.raises(SystemExit) as done:
        main(["languages", "--frobnicate"])
    assert done.value.code == 2


@pytest.mark.slow
def test_demo_runs_small(tmp_path, capsys):
    out = tmp_path / "demo"
    args = ["demo", "--output", str(out), "--words", "200", "--dim", "8", "--permutations", "19", "--workers", "1"]
    assert main([*args, "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "gender" in printed and str(out / "report" / "index.html") in printed
    assert xr.open_zarr(out / "results.zarr", consolidated=False).sizes["language"] == 26


def test_demo_with_no_words(tmp_path, capsys):
    assert main(["demo", "--output", str(tmp_path / "demo"), "--words", "0"]) == 2
    assert "--words" in _one_error_line(capsys.readouterr().err)


SUBCOMMANDS = (
    "ingest",
    "run",
    "demo",
    "debias",
    "show",
    "info",
    "words",
    "plot",
    "report",
    "meta",
    "reliability",
    "agreement",
    "languages",
)


def _parser(command: str) -> argparse.ArgumentParser:
    from biasdask.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def _options(command: str) -> dict[str, str]:
    """Every option a subcommand's --help shows: its flags -> its help text."""
    return {
        ", ".join(a.option_strings): a.help or ""
        for a in _parser(command)._actions
        if a.option_strings and a.help != argparse.SUPPRESS
    }


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommand_speaks_the_one_grammar(command):
    """What a subcommand writes goes to -o/--output; --format is the format of what it prints; --scheduler
    ADDRESS, --workers N and --quiet come together, with the same words, and nothing else names them."""
    options, text = _options(command), " ".join(_parser(command).format_help().split())
    flags = {flag for key in options for flag in key.split(", ")}
    assert not flags & {"--out", "--plot", "--dest", "--no-progress"} and "DEST" not in text
    assert command != "debias" or "--method" not in flags  # debias takes an --algorithm; --method is a weighting
    if "--output" in flags:
        assert "-o, --output" in options
    if "--format" in flags:  # the format of what is printed, one of the table formats
        assert options["--format"].startswith("output format")
    where = {"--scheduler", "--workers", "--quiet"}
    if flags & where:
        assert where <= flags and "[--scheduler ADDRESS | --workers N]" in text
        assert options["--scheduler"] == "run on the Dask scheduler at ADDRESS, e.g. tcp://10.0.0.5:8786"
        assert options["--quiet"] == "no progress bars"
        assert options["--workers"].startswith("run on a local Dask cluster of N worker processes (0: in this process)")


def test_the_grammar_test_sees_every_subcommand_and_a_shared_option_reads_the_same_everywhere():
    """A flag or positional of several subcommands has one metavar (-o/--output's names what is written);
    the words of the vocabulary (a results store, a weighting, an association, where work runs) also mean
    the same, but for their defaults."""
    from biasdask.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(sub.choices) == sorted(SUBCOMMANDS)
    metavars: dict[str, set[str]] = {}
    meanings: dict[str, set[str]] = {}
    for command in SUBCOMMANDS:
        for a in _parser(command)._actions:
            if a.help == argparse.SUPPRESS or "--output" in a.option_strings or "--help" in a.option_strings:
                continue
            key = ", ".join(a.option_strings) or str(a.metavar)
            metavars.setdefault(key, set()).add(str(a.metavar))
            meanings.setdefault(key, set()).add((a.help or "").split(" (")[0].split("; default")[0])
    assert not {key: m for key, m in metavars.items() if len(m) > 1}
    vocabulary = ("RESULTS", "--method", "--association", "--format", "--scheduler", "--workers", "--quiet")
    assert all(len(metavars[key]) for key in vocabulary)
    assert not {key: meanings[key] for key in vocabulary if len(meanings[key]) > 1}


def test_the_subcommands_that_compute_say_where_and_those_that_write_say_where_to():
    assert [c for c in SUBCOMMANDS if "--workers" in _options(c)] == ["ingest", "run", "demo", "debias"]
    writes = ["ingest", "run", "demo", "debias", "plot", "report", "meta"]
    assert [c for c in SUBCOMMANDS if "-o, --output" in _options(c)] == writes


@pytest.mark.parametrize(
    "old, new",
    [
        (["plot", "R.zarr", "--out", "png"], {"output": "png"}),
        (["report", "R.zarr", "--out", "site"], {"output": "site"}),
        (["meta", "R.zarr", "--test", "gender", "--plot", "f.png"], {"output": "f.png"}),
        (["ingest", "en.vec", "--language", "en", "--format", "glove"], {"input_format": "glove"}),
        (
            ["debias", "en.zarr", "-o", "x.zarr", "--method", "hard", "--no-progress"],
            {"algorithm": "hard", "quiet": True},
        ),
    ],
)
def test_the_flags_of_the_last_release_still_parse_with_a_warning(old, new, capsys):
    from biasdask.cli import build_parser

    args = build_parser().parse_args(old)
    assert {k: getattr(args, k) for k in new} == new
    err = capsys.readouterr().err
    assert err.count("is deprecated; use --") == len(new) and "Traceback" not in err


def test_a_positional_output_of_the_last_release_warns_and_is_used(tmp_path, capsys):
    src = tmp_path / "en.vec"
    _write_vec(src, ["male", "female", *(f"w{i}" for i in range(30))], seed=1)
    assert main(["ingest", str(src), str(tmp_path / "en.zarr"), "--language", "en", "--quiet", "--workers", "0"]) == 0
    assert "the positional STORE is deprecated; use --output" in capsys.readouterr().err
    assert xr.open_zarr(tmp_path / "en.zarr", consolidated=False).sizes["word"] == 32
    assert main(["ingest", str(src), "--language", "en", "--quiet"]) == 2
    assert "give the store to write with --output" in _one_error_line(capsys.readouterr().err)
