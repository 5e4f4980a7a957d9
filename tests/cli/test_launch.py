"""``crawlchain launch``: the generic crawl's options, checked before anything connects."""

from __future__ import annotations

import pytest

from cli import main


@pytest.mark.parametrize(("args", "says"), [
    (["crawl"], "a crawl needs at least one --start URL"),
    (["crawl", "--start", "ftp://x/"], "--start 'ftp://x/': scheme 'ftp' is not http/https"),
    (["crawl", "--start", "http://x.test/", "--deny", "("], "--deny '(' is not a regular"),
    (["crawl", "--start", "http://x.test/", "--max-pages", "0"], "--max-pages must be 1"),
    (["crawl", "--start", "http://x.test/", "--allow-domain", "co.uk"], "public suffix"),
    (["crawl", "page=1"], "not key=value pairs"),
    (["demo", "--start", "http://x.test/"], "--start: options of the generic crawl"),
])
def test_bad_options_are_refused_naming_what_was_wrong(
        args: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["launch", *args]) == 2
    said = capsys.readouterr().err
    assert says in said and said.count("\n") == 1
