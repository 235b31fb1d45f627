"""Secrets a URL carries (presigned query strings, user info) never come back in a message."""

from __future__ import annotations

import pytest

from biasdask.engine.ingest import ingest
from biasdask.errors import BiasdaskError

SECRET_QUERY = (
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIASECRETCRED%2F20261123&X-Amz-Signature=deadbeefsecretsig"
)


def _no_secret(text: str) -> None:
    assert "deadbeefsecretsig" not in text and "AKIASECRETCRED" not in text and "hunter2" not in text


@pytest.mark.parametrize("path", ["missing.vec", "bad.vec"])
def test_presigned_url_errors_keep_no_query(tmp_path, http_server, cli, path):
    root, base = http_server
    (root / "bad.vec").write_bytes(b"2 3\na 1 2 3\nb 1 x 3\n")
    url = f"{base}/{path}?{SECRET_QUERY}"
    with pytest.raises(BiasdaskError) as info:
        ingest(url, str(tmp_path / "en.zarr"), language="en", client=False, progress=False)
    _no_secret(str(info.value))
    assert path in str(info.value)
    code, out, err = cli("ingest", url, "-o", tmp_path / "en.zarr", "--language", "en", "--workers", "0", "--quiet")
    assert code == 2
    _no_secret(out + err)


def test_user_info_in_a_url_is_not_shown(tmp_path, http_server, cli):
    _, base = http_server
    url = base.replace("http://", "http://user:hunter2@") + "/missing.vec"
    code, out, err = cli("ingest", url, "-o", tmp_path / "en.zarr", "--language", "en", "--workers", "0", "--quiet")
    assert code == 2
    _no_secret(out + err)


def test_redact_removes_queries_user_info_and_loose_signatures():
    from biasdask.io.fs import redact

    text = (
        "ClientResponseError: 403, url='https://b.s3.amazonaws.com/en.vec?" + SECRET_QUERY + "' "
        "via s3://AKIA:hunter2@bucket/x and X-Amz-Signature=deadbeefsecretsig"
    )
    cleaned = redact(text)
    _no_secret(cleaned)
    assert "https://b.s3.amazonaws.com/en.vec" in cleaned and "s3://bucket/x" in cleaned
