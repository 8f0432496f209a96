"""The fixture runner: every ``fixtures/<CODE>/<case>.*`` file through the whole engine.

Conventions (``fixtures/README.md``):

* ``<case>.before.py`` -> ``<case>.after.py``: the rewrite matches, a second run changes
  nothing, the output compiles, and the CRLF and UTF-8-BOM variants (derived here from
  the LF file) come out as the same rewrite with CRLF / the BOM kept;
* ``<case>.noop.py``: byte-identical after the engine (LF, CRLF and BOM variants);
* ``<case>.diagnostics.txt`` (optional, beside either kind): the ``line:col: CODE``
  list the engine reports for the before/noop file, in order, one per line;
* an optional first line ``# fixture-options: unsafe_fixes=true add_clip_norm=5.0
  select=TFC1 ignore=TFC201`` in the before/noop file sets the engine options (the line
  stays in the after file).
"""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from codemods.api import Options, migrate_bytes, migrate_source
from _fixtures_lib import Case, discover, parse_options

CASES = discover()
REWRITES = [c for c in CASES if c.expected is not None]
NOOPS = [c for c in CASES if c.expected is None]
WITH_DIAGNOSTICS = [c for c in CASES if c.diagnostics is not None]


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def _run(case: Case, text: str) -> str:
    return migrate_source(text, parse_options(text, str(case.source)), path=str(case.source)).code


def test_fixtures_are_discovered() -> None:
    """The runner finds rewrite, no-op and diagnostics cases (an empty run would prove nothing)."""
    assert REWRITES and NOOPS and WITH_DIAGNOSTICS


@pytest.mark.parametrize("case", REWRITES, ids=lambda c: c.id)
def test_rewrite(case: Case) -> None:
    """The engine turns the before file into exactly the after file."""
    assert _run(case, _read(case.source)) == _read(case.expected)


@pytest.mark.parametrize("case", REWRITES, ids=lambda c: c.id)
def test_rewrite_is_idempotent(case: Case) -> None:
    """A second run over the after file changes nothing."""
    after = _read(case.expected)
    assert _run(case, after) == after


@pytest.mark.parametrize("case", REWRITES, ids=lambda c: c.id)
def test_after_compiles(case: Case) -> None:
    """The expected (and therefore the produced) code is valid Python."""
    compile(_read(case.expected), str(case.expected), "exec")


@pytest.mark.parametrize("variant", ["crlf", "bom", "crlf+bom"])
@pytest.mark.parametrize("case", REWRITES, ids=lambda c: c.id)
def test_rewrite_keeps_crlf_and_bom(case: Case, variant: str) -> None:
    """On file bytes, CRLF line endings and a UTF-8 BOM survive the rewrite."""
    before, after = _read(case.source), _read(case.expected)
    options = parse_options(before, str(case.source))
    if "crlf" in variant:
        before, after = before.replace("\n", "\r\n"), after.replace("\n", "\r\n")
    prefix = codecs.BOM_UTF8 if "bom" in variant else b""
    data, result = migrate_bytes(prefix + before.encode("utf-8"), options, path=str(case.source))
    assert result.changed
    assert data == prefix + after.encode("utf-8")


@pytest.mark.parametrize("variant", ["lf", "crlf", "bom"])
@pytest.mark.parametrize("case", NOOPS, ids=lambda c: c.id)
def test_noop_is_byte_identical(case: Case, variant: str) -> None:
    """A look-alike (or declined) file comes back byte for byte, in every newline/BOM form."""
    text = _read(case.source)
    options = parse_options(text, str(case.source))
    if variant == "crlf":
        text = text.replace("\n", "\r\n")
    data = (codecs.BOM_UTF8 if variant == "bom" else b"") + text.encode("utf-8")
    out, result = migrate_bytes(data, options, path=str(case.source))
    assert not result.changed
    assert out == data


@pytest.mark.parametrize("case", WITH_DIAGNOSTICS, ids=lambda c: c.id)
def test_diagnostics(case: Case) -> None:
    """The engine reports exactly the ``line:col: CODE`` list of the diagnostics file."""
    text = _read(case.source)
    result = migrate_source(text, parse_options(text, str(case.source)), path=str(case.source))
    got = [f"{d.line}:{d.col}: {d.code}" for d in result.diagnostics]
    expected = [ln.strip() for ln in _read(case.diagnostics).splitlines() if ln.strip()]
    assert got == expected


def test_options_line_is_parsed() -> None:
    """The fixture-options line sets booleans, floats and code sets; no line means defaults."""
    opts = parse_options("# fixture-options: unsafe_fixes=true add_clip_norm=5.0 select=TFC0,TFC1\nx = 1\n")
    assert opts == Options(unsafe_fixes=True, add_clip_norm=5.0, select=frozenset({"TFC0", "TFC1"}))
    assert parse_options("x = 1\n") == Options()


def test_bad_options_line_names_the_problem() -> None:
    """An unknown or malformed option fails with a message naming the file and the option."""
    with pytest.raises(ValueError, match=r"case\.py: unknown fixture option 'unsafe'"):
        parse_options("# fixture-options: unsafe=true\n", "case.py")
    with pytest.raises(ValueError, match="unsafe_fixes must be true or false"):
        parse_options("# fixture-options: unsafe_fixes=yes\n", "case.py")


def test_missing_after_file_is_an_error(tmp_path: Path) -> None:
    """A before file without its after file is reported, not silently skipped."""
    (tmp_path / "TFC999").mkdir()
    (tmp_path / "TFC999" / "lonely.before.py").write_text("x = 1\n")
    with pytest.raises(FileNotFoundError, match=r"missing lonely\.after\.py"):
        discover(tmp_path)
