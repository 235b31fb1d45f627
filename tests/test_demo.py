"""The demo's generated languages (the main job's embedded default)."""

from __future__ import annotations

import pytest

from biasdask.demo import generate


def test_a_subset_of_languages_is_generated_as_among_all_26(tmp_path):
    everything = {lang.code: lang for lang in generate(tmp_path / "all", n_words=60, dim=4)}
    some = generate(tmp_path / "some", n_words=60, dim=4, languages=["yo", "en"])
    assert [lang.code for lang in some] == ["en", "yo"]  # catalog order
    assert sorted(p.name for p in (tmp_path / "some").iterdir()) == ["en.bin", "yo.bin"]
    for lang in some:
        assert lang.strength == everything[lang.code].strength
        assert lang.path.read_bytes() == everything[lang.code].path.read_bytes()
    with pytest.raises(ValueError, match="no demo language xx"):
        generate(tmp_path / "bad", n_words=60, dim=4, languages=["en", "xx"])
