"""Files of words a user gives: word lists (one word a line), word pairs (two words a line) and the word
sets of one test in WEATHub's layout (Mukherjee et al. 2023).

Read through :func:`biasdask.io.fs.url_to_fs`, so a path or any URL works (with its storage options and,
for http(s), the configured timeouts), compressed or not; an error names the file and the line or key.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Sequence

import fsspec

from biasdask.errors import BiasdaskOSError, InputFormatError
from biasdask.io.fs import NETWORK_ERRORS, Locatable, Location, as_location, one_line, timeout_error, url_to_fs
from biasdask.lexicon import WordSets

__all__ = [
    "WEATHUB_KEYS",
    "fill_template",
    "parse_word_sets",
    "read_word_pairs",
    "read_word_set_files",
    "read_word_sets",
    "read_words",
]

#: the keys of a WEATHub file and the roles of :class:`~biasdask.lexicon.WordSets` they fill: targets
#: X (``targ1``), Y (``targ2``), attributes A (``attr1``), B (``attr2``)
WEATHUB_KEYS: dict[str, str] = {"targ1": "x", "targ2": "y", "attr1": "a", "attr2": "b"}


def _read_bytes(place: Locatable, what: str) -> tuple[str, bytes]:
    loc = as_location(place)
    try:
        fs, path = url_to_fs(loc)
        with fs.open(path, "rb", compression=fsspec.utils.infer_compression(path)) as f:
            return str(loc), f.read()
    except FileNotFoundError:
        raise InputFormatError(f"{loc}: no such {what} file") from None


def read_words(place: Locatable) -> list[str]:
    """The words of a file holding one word a line (blank lines and surrounding spaces ignored).

    Raises
    ------
    InputFormatError
        A missing file or a line that is not UTF-8 (naming the file and the line).
    """
    shown, data = _read_bytes(place, "word list")
    words = []
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        try:
            word = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise InputFormatError(f"{shown}:{lineno}: not valid UTF-8") from None
        if word:
            words.append(word)
    return words


def read_word_pairs(place: Locatable) -> list[tuple[str, str]]:
    """The pairs of a two-column file (a bilingual dictionary, definitional pairs): tab-separated, or
    else separated by ASCII spaces; blank lines skipped.

    Raises
    ------
    InputFormatError
        A missing file, a line that is not UTF-8 or does not hold two words, or no pair at all (naming
        the file and the line).
    """
    shown, data = _read_bytes(place, "dictionary")
    pairs = []
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        line = raw.rstrip(b"\r")
        if not line.strip(b" \t"):
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            raise InputFormatError(f"{shown}:{lineno}: not valid UTF-8") from None
        fields = text.split("\t") if "\t" in text else [f for f in text.split(" ") if f]
        if len(fields) != 2 or not all(fields):
            raise InputFormatError(f"{shown}:{lineno}: expected two words (source, target), got {len(fields)} field(s)")
        pairs.append((fields[0], fields[1]))
    if not pairs:
        raise InputFormatError(f"{shown}: the dictionary holds no word pairs")
    return pairs


def fill_template(template: str, *, language: str | None = None, test: str | None = None) -> str:
    """``template`` with ``{language}`` and ``{test}`` replaced by ``language`` and ``test`` where given
    (any other text, braces included, is kept as it is).

    Examples
    --------
    >>> fill_template("https://example.org/data/{language}_all/{test}.json", language="ar", test="weat7")
    'https://example.org/data/ar_all/weat7.json'
    """
    if language is not None:
        template = template.replace("{language}", language)
    if test is not None:
        template = template.replace("{test}", test)
    return template


def parse_word_sets(shown: str, data: bytes, *, test: str | None = None, language: str | None = None) -> WordSets:
    """The word sets of the file ``shown`` (its bytes ``data``) in WEATHub's layout: a JSON object whose
    keys ``targ1``, ``targ2``, ``attr1``, ``attr2`` (:data:`WEATHUB_KEYS`) each hold a ``category`` (the
    set's name) and ``examples`` (its words); other keys are ignored.

    Parameters
    ----------
    shown
        The file as messages name it (no credentials).
    data
        Its contents (UTF-8 JSON).
    test
        The test label the sets get (default: the file's name without ``.json``).
    language
        The language of the words, where known.

    Raises
    ------
    InputFormatError
        Not UTF-8 JSON (naming the line and column), not an object, a key missing, or a set that is no
        non-empty list of words (naming the key, e.g. ``attr2.examples[3]``).

    Examples
    --------
    >>> sets = parse_word_sets("weat7.json", b'''{"targ1": {"category": "Math", "examples": ["math", "algebra"]},
    ...     "targ2": {"category": "Arts", "examples": ["poetry", "art"]},
    ...     "attr1": {"category": "MaleTerms", "examples": ["he", "man"]},
    ...     "attr2": {"category": "FemaleTerms", "examples": ["she", "woman"]}}''', language="en")
    >>> sets.test, sets.x, sets.names
    ('weat7', ('math', 'algebra'), ('Math', 'Arts', 'MaleTerms', 'FemaleTerms'))
    """
    layout = "WEATHub's layout: targ1, targ2, attr1, attr2, each with its category and examples"
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputFormatError(f"{shown}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise InputFormatError(f"{shown}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(doc, dict):
        raise InputFormatError(f"{shown}: expected a JSON object in {layout}, got a {type(doc).__name__}")
    sets: dict[str, tuple[str, ...]] = {}
    names: dict[str, str] = {}
    for key, role in WEATHUB_KEYS.items():
        if key not in doc:
            raise InputFormatError(f"{shown}: key {key} is missing ({layout})")
        entry = doc[key]
        if not isinstance(entry, dict) or "examples" not in entry:
            raise InputFormatError(f"{shown}: {key}: expected an object with its examples (a list of words)")
        words = entry["examples"]
        if not isinstance(words, list) or not words:
            raise InputFormatError(f"{shown}: {key}.examples: expected a non-empty list of words, got {words!r:.60}")
        for i, word in enumerate(words):
            if not isinstance(word, str) or not word.strip():
                raise InputFormatError(f"{shown}: {key}.examples[{i}]: expected a word, got {word!r:.60}")
        name = entry.get("category", key)
        if not isinstance(name, str) or not name:
            raise InputFormatError(f"{shown}: {key}.category: expected the set's name, got {name!r:.60}")
        sets[role], names[role] = tuple(w.strip() for w in words), name
    if test is None:
        test = shown.rstrip("/").rsplit("/", 1)[-1].removesuffix(".json")
    return WordSets(
        sets["x"],
        sets["y"],
        sets["a"],
        sets["b"],
        x_name=names["x"],
        y_name=names["y"],
        a_name=names["a"],
        b_name=names["b"],
        test=test,
        language=language,
        source=shown,
    )


def read_word_sets(place: Locatable, *, test: str | None = None, language: str | None = None) -> WordSets:
    """The word sets of one test from a file in WEATHub's layout (Mukherjee et al. 2023: one JSON per
    language and test, :func:`parse_word_sets`), at a path or any URL (http(s), s3, gs, ``file://``,
    ``memory://``; a :class:`~biasdask.Location` carries its storage options).

    Parameters
    ----------
    place
        The file. ``{language}`` and ``{test}`` in its path are replaced by ``language`` and ``test``
        (:func:`fill_template`), so one template serves every language and test.
    test
        The test label the sets get (default: the file's name without ``.json``).
    language
        The language of the words.

    Returns
    -------
    WordSets
        Targets X, Y from ``targ1``, ``targ2``, attributes A, B from ``attr1``, ``attr2``, named by their
        ``category``; ``source`` names the file (without credentials).

    Raises
    ------
    InputFormatError
        A missing file, or one not in WEATHub's layout (naming the file and the key).
    BiasdaskOSError
        The file cannot be read (the network, a timeout), naming it.

    Examples
    --------
    >>> import fsspec
    >>> import biasdask
    >>> with fsspec.open("memory://examples/weathub/en/weat7.json", "w") as f:
    ...     _ = f.write('{"targ1": {"category": "Math", "examples": ["math", "algebra"]}, '
    ...                 '"targ2": {"category": "Arts", "examples": ["poetry", "art"]}, '
    ...                 '"attr1": {"category": "MaleTerms", "examples": ["he", "man"]}, '
    ...                 '"attr2": {"category": "FemaleTerms", "examples": ["she", "woman"]}}')
    >>> sets = biasdask.read_word_sets("memory://examples/weathub/{language}/{test}.json", language="en", test="weat7")
    >>> sets.test, sets.language, sets.a, sets.source
    ('weat7', 'en', ('he', 'man'), 'memory://examples/weathub/en/weat7.json')
    """
    loc = as_location(place, "place")
    loc = Location(fill_template(loc.url, language=language, test=test), loc.storage_options)
    for field in ("language", "test"):
        if "{" + field + "}" in loc.url:
            raise InputFormatError(f"{loc}: the path holds {{{field}}} and no {field} is given to fill it")
    (data,) = read_word_set_files([loc])
    if isinstance(data, Exception):
        raise data
    if data is None:
        raise InputFormatError(f"{loc}: no such word set file")
    return parse_word_sets(str(loc), data, test=test, language=language)


#: files a study reads at once (http requests in flight)
_READERS = 8


def read_word_set_files(places: Sequence[Location]) -> list[bytes | None | BiasdaskOSError]:
    """The bytes of each file of ``places``, read at once (a study's word set files: a few per language);
    None for a file that does not exist (a 404), the one-line error of one that cannot be read (the
    network, a timeout)."""

    def read(loc: Location) -> bytes | None | BiasdaskOSError:
        try:
            fs, path = url_to_fs(loc)
            # one GET (fsspec's open of a URL asks for its details first, and calls any failure of that
            # request, a refused connection or a timeout, a missing file)
            return fs.cat_file(path)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        except (asyncio.TimeoutError, TimeoutError) as exc:
            return BiasdaskOSError(str(timeout_error(str(loc), exc)))
        except NETWORK_ERRORS as exc:
            return BiasdaskOSError(f"{loc}: cannot read the word set file: {one_line(exc)}")

    if len(places) < 2:
        return [read(loc) for loc in places]
    with concurrent.futures.ThreadPoolExecutor(min(_READERS, len(places))) as pool:
        return list(pool.map(read, places))
