"""A study's word sets from files: the study key ``word_sets``.

``word_sets`` names files (or URLs) in WEATHub's layout (Mukherjee et al. 2023: one JSON per language and
test with ``targ1``, ``targ2``, ``attr1``, ``attr2`` and their ``examples``,
:func:`biasdask.io.wordfiles.parse_word_sets`), each under a name; ``{language}`` and ``{test}`` in a path
are filled in::

    word_sets:
      weathub: https://raw.githubusercontent.com/iamshnoo/weathub/main/data/{language}_all/{test}.json
    tests: [gender, weathub.weat1, weathub.weat7]

A test label ``NAME.TEST`` of ``tests`` reads the file of ``NAME`` with ``{test}`` = ``TEST`` in each
language of the study (``weathub.weat7`` reads ``.../ar_all/weat7.json`` for ``ar``); a path without
``{test}`` is one test, labelled ``NAME``; a path without ``{language}`` gives its words to every language.
The files are read when the study is loaded, all at once, through the package's one opener (with the
study's ``storage_options`` and, for http(s), the configured timeouts), so that a bad file fails the
study before anything runs, with one line naming the key, the file and what is wrong. A language without
a file for a test (a 404) is one the test does not apply to: its cells are written as not applicable, as
the classic tests' in the languages they have no lists for; a test with a file in no language is an
error.

The words read are part of the study (:func:`canonical_word_sets`): a file whose words change is a
changed study, and ``update`` recomputes the cells of its test only (:func:`changed_word_sets`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from biasdask.errors import BiasdaskError, BiasdaskOSError, ConfigError, InputFormatError
from biasdask.io.fs import Location, display_url, storage_options_for
from biasdask.io.wordfiles import fill_template, parse_word_sets, read_word_set_files
from biasdask.lexicon import WordSets

__all__ = [
    "canonical_word_sets",
    "changed_word_sets",
    "file_test_labels",
    "read_study_word_sets",
    "word_set_sources",
]

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_TEST = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_EXAMPLE = "{weathub: https://.../data/{language}_all/{test}.json}"


def word_set_sources(raw: Mapping[str, Any], reserved: Iterable[str]) -> dict[str, str]:
    """The study's ``word_sets``: name -> path or URL template, validated (no file read).

    Parameters
    ----------
    raw
        The study.
    reserved
        Test labels a name may not take (the package's own tests).

    Raises
    ------
    ConfigError
        Not a mapping of names to paths, a name that is no identifier or is a test of the package, or a
        path whose protocol has no file system installed.
    """
    value = raw.get("word_sets")
    if value is None:
        return {}
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"word_sets: expected a mapping of a name to a file or URL template, e.g. {_EXAMPLE}")
    taken = set(reserved)
    sources = {}
    for name, template in value.items():
        key = f"word_sets.{name}"
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(f"{key}: a name is a letter followed by letters, digits, _ or - (it starts test labels)")
        if name in taken:
            raise ConfigError(f"{key}: {name!r} is a test of the package; choose another name")
        if not isinstance(template, str) or not template.strip():
            raise ConfigError(f"{key}: expected the path or URL of a file in WEATHub's layout, got {template!r}")
        try:
            storage_options_for(template, None)  # its file system is installed
        except BiasdaskError as exc:
            raise ConfigError(f"{key}: {exc}") from None
        sources[name] = template
    return sources


def file_test_labels(tests: Sequence[Any], sources: Mapping[str, str]) -> list[str]:
    """The labels of ``tests`` that name a test of ``sources`` (:func:`word_set_sources`): ``NAME.TEST``
    of a path with ``{test}``, ``NAME`` of one without.

    Examples
    --------
    >>> file_test_labels(["gender", "weathub.weat7", "mine"], {"weathub": "d/{language}/{test}.json", "mine": "m.json"})
    ['weathub.weat7', 'mine']
    """
    labels = []
    for label in tests:
        if not isinstance(label, str):
            continue
        name, dot, test = label.partition(".")
        if name not in sources:
            continue
        if "{test}" in sources[name] and dot and _TEST.fullmatch(test):
            labels.append(label)
        elif "{test}" not in sources[name] and not dot:
            labels.append(label)
    return labels


def _unused(sources: Mapping[str, str], labels: Sequence[str]) -> None:
    for name, template in sources.items():
        if not any(label.partition(".")[0] == name for label in labels):
            form = f"{name}.<test>, e.g. {name}.weat1 for {{test}} = weat1" if "{test}" in template else name
            raise ConfigError(f"word_sets.{name}: no test of 'tests' reads it: name its tests there as {form}")


def read_study_word_sets(
    sources: Mapping[str, str], labels: Sequence[str], languages: Sequence[str], storage_options: Mapping[str, Any]
) -> dict[str, dict[str, WordSets]]:
    """Read the word sets of the tests ``labels`` (:func:`file_test_labels`) in each of ``languages``,
    every file at once.

    Returns
    -------
    dict
        Test label -> language -> its :class:`~biasdask.lexicon.WordSets` (labelled with the test, their
        ``source`` the file without credentials); a language without a file is absent.

    Raises
    ------
    ConfigError
        A name of ``sources`` no test reads, a file not in WEATHub's layout, or a test with no file in any
        language (each naming the key and the file).
    BiasdaskOSError
        A file that cannot be read (the network, a timeout), named with its key.
    """
    _unused(sources, labels)
    wanted: dict[tuple[str, str], str] = {}
    for label in labels:
        name, _, test = label.partition(".")
        for code in languages:
            wanted[label, code] = fill_template(sources[name], language=code, test=test or None)
    urls = list(dict.fromkeys(wanted.values()))  # a path without {language}: one read for every language
    read = dict(zip(urls, read_word_set_files([Location(url, dict(storage_options)) for url in urls])))
    found: dict[str, dict[str, WordSets]] = {label: {} for label in labels}
    for (label, code), url in wanted.items():
        key, data = f"word_sets.{label.partition('.')[0]}", read[url]
        if isinstance(data, BiasdaskOSError):
            raise BiasdaskOSError(f"{key}: {data}")
        if data is None:
            continue
        try:
            found[label][code] = parse_word_sets(display_url(url), data, test=label, language=code)
        except InputFormatError as exc:
            raise ConfigError(f"{key}: {exc}") from None
    for label, per_language in found.items():
        if not per_language:
            first = display_url(wanted[label, languages[0]])
            raise ConfigError(
                f"word_sets.{label.partition('.')[0]}: test {label} has a file in no language of the study "
                f"({first}: no such file)"
            )
    return found


def canonical_word_sets(word_sets: Mapping[str, Mapping[str, WordSets]]) -> dict[str, dict[str, dict[str, Any]]]:
    """The word sets of a study as its canonical form records them: test label -> language -> the file
    and the names and words of X, Y, A and B."""
    return {
        label: {
            code: {
                "file": sets.source,
                "names": list(sets.names),
                **{role: list(getattr(sets, role)) for role in ("x", "y", "a", "b")},
            }
            for code, sets in per_language.items()
        }
        for label, per_language in word_sets.items()
    }


def changed_word_sets(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    """The test labels whose word sets (canonical, :func:`canonical_word_sets`) differ between ``old`` and
    ``new``, a test of one of them only included.

    Examples
    --------
    >>> changed_word_sets({"w.a": {"en": {"x": ["he"]}}, "w.b": {}}, {"w.a": {"en": {"x": ["she"]}}, "w.b": {}})
    ['w.a']
    """
    old, new = old or {}, new or {}
    return [label for label in sorted(set(old) | set(new)) if old.get(label) != new.get(label)]
