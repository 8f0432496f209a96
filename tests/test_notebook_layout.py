"""Notebooks are written back in their own JSON layout, whatever wrote them (issue 10: no
`tf.contrib` clipping call survives `fix`; docs/corpus.md problem 3), and `check` advertises
exactly the fixes `fix` applies.

Each layout case is a notebook with the TFC001 site in a later cell than the import; `fix
--select TFC001` must rewrite it, and every byte outside the changed cells' `source` values
must stay as it was. The spans are located here independently of `codemods.notebooks.layout`
(by the unique first and last line of each cell), and the new values must decode to the same
sources as the Jupyter-layout reference run.
"""

from __future__ import annotations

import json
import re
from typing import Dict, List, Tuple

import pytest

import _cli_rules
from codemods.cli import main

IMPORTS = ["%matplotlib inline\n", "import numpy as np\n", "import tensorflow as tf"]
TRAIN = [
    "!pip install -q pandas\n",
    "opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)\n",
    "\n",
    "if steps > 10:  # « long » run\n",
    "    opt = tf.compat.v1.train.GradientDescentOptimizer(0.01)\n",
    "clipped = tf.contrib.estimator.clip_gradients_by_norm(opt, clip_norm=(5.0 if big > 1 else 1.0))  # café\n",
    "%time total = sum(range(10))",
]
OUTPUTS = [{"name": "stdout", "output_type": "stream",
            "text": ['"source": ["tf.contrib.estimator.clip_gradients_by_norm(opt, 1.0)"]\n', "naïve → ok\n"]}]


def cells(source_as_string: bool = False) -> List[dict]:
    """Markdown with non-ASCII, the import cell, an untouched code cell, the training cell."""
    def src(lines: List[str]):
        return "".join(lines) if source_as_string else lines

    return [
        {"cell_type": "markdown", "metadata": {"id": "m1"},
         "source": src(["# Clipping — `tf.contrib.estimator.clip_gradients_by_norm` & <friends>\n"])},
        {"cell_type": "code", "execution_count": 1, "metadata": {"id": "c1", "source": "not-the-source"},
         "outputs": [], "source": src(IMPORTS)},
        {"cell_type": "code", "execution_count": 2, "metadata": {"tags": ['"source": [']},
         "outputs": OUTPUTS, "source": src(["steps, big = 20, 2\n", "print('ünïcode')"])},
        {"cell_type": "code", "execution_count": 3, "metadata": {}, "outputs": [], "source": src(TRAIN)},
    ]


def document(cell_list: List[dict]) -> dict:
    return {"cells": cell_list, "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5}


def dumps(indent=1, ensure_ascii=False, separators=None, source_as_string=False, newline="\n") -> bytes:
    text = json.dumps(document(cells(source_as_string)), indent=indent, ensure_ascii=ensure_ascii,
                      separators=separators) + "\n"
    return text.replace("\n", newline).encode("utf-8")


# Modelled on the ML Crash Course notebooks as Colab saved them (google/eng-edu,
# ml/cc/exercises/estimators/feature_sets.ipynb): nbformat keys first, the first cell's "{"
# indented 6 under `"cells": [`, metadata before source, a tab-indented line, `<`, `>` and `&`
# escaped as \u003c \u003e \u0026, other non-ASCII raw but for one hand-edited line, no final
# newline.
COLAB = r"""{
  "nbformat": 4,
  "nbformat_minor": 0,
  "metadata": {
    "colab": {
      "name": "feature_sets.ipynb",
      "version": "0.3.2",
      "provenance": []
    },
    "kernelspec": {
      "name": "python3",
      "display_name": "Python 3"
    }
  },
  "cells": [
      {
      "metadata": {
        "id": "m1",
        "colab_type": "text"
      },
      "source": [
        "# Clipping — `tf.contrib.estimator.clip_gradients_by_norm` \u0026 \u003cfriends\u003e\n"
      ],
      "cell_type": "markdown"
    },
    {
      "metadata": {
        "id": "c1",
        "colab_type": "code",
        "source": "not-the-source",
        "colab": {
          "autoexec": {
            "startup": false,
            "wait_interval": 0
          }
        }
      },
      "source": [
        "%matplotlib inline\n",
	"import numpy as np\n",
        "import tensorflow as tf"
      ],
      "cell_type": "code",
      "execution_count": 0,
      "outputs": []
    },
    {
      "metadata": {
        "tags": ["\"source\": ["]
      },
      "source": [
        "steps, big = 20, 2\n",
        "print('ünïcode')"
      ],
      "cell_type": "code",
      "execution_count": 0,
      "outputs": [
        {
          "name": "stdout",
          "output_type": "stream",
          "text": [
            "\"source\": [\"tf.contrib.estimator.clip_gradients_by_norm(opt, 1.0)\"]\n",
            "naïve → ok\n"
          ]
        }
      ]
    },
    {
      "metadata": {},
      "source": [
        "!pip install -q pandas\n",
        "opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)\n",
        "\n",
	"if steps \u003e 10:  # \u00ab long \u00bb run\n",
        "    opt = tf.compat.v1.train.GradientDescentOptimizer(0.01)\n",
        "clipped = tf.contrib.estimator.clip_gradients_by_norm(opt, clip_norm=(5.0 if big \u003e 1 else 1.0))  # café\n",
        "%time total = sum(range(10))"
      ],
      "cell_type": "code",
      "execution_count": 0,
      "outputs": []
    }
  ]
}"""

LAYOUTS = [
    pytest.param(COLAB.encode("utf-8"), id="colab-irregular"),
    pytest.param(dumps(indent=1), id="jupyter-indent1"),
    pytest.param(dumps(indent=2, ensure_ascii=True), id="indent2-ascii-escapes"),
    pytest.param(dumps(indent=None, separators=(",", ":")), id="minified"),
    pytest.param(dumps(indent=None), id="one-line-spaced"),
    pytest.param(dumps(indent=1, source_as_string=True), id="string-sources"),
    pytest.param(dumps(indent=1, newline="\r\n"), id="crlf"),
    pytest.param(b"\xef\xbb\xbf" + dumps(indent=4, ensure_ascii=True, newline="\r\n"), id="bom-crlf-indent4"),
]


def run(capsys, *argv) -> Tuple[int, str, str]:
    rc = main([*argv, "--isolated", "-j1", "--no-cache"])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def value_spans(text: str) -> List[Tuple[int, int]]:
    """The `source` values of cells 2 and 4 (the changed ones), found by their unique first and
    last lines: from the `"source"` key's value to the closing `]` (or the string's end)."""
    spans = []
    for first, last in (("%matplotlib inline", "import tensorflow as tf"), ("!pip install", "%time total")):
        at = text.index(first)
        key = text.rindex('"source"', 0, at)
        start = text.index(":", key) + 1
        start += len(text[start:]) - len(text[start:].lstrip(" \t\r\n"))
        end_of_last = text.index('"', text.index(last)) + 1
        end = text.index("]", end_of_last) + 1 if text[start] == "[" else end_of_last
        spans.append((start, end))
    return spans


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> List:
    """The sources `fix --select TFC001` gives the Jupyter-layout notebook (the engine's output
    does not depend on the layout)."""
    path = tmp_path_factory.mktemp("ref") / "nb.ipynb"
    path.write_bytes(dumps(indent=1))
    assert main(["fix", "--select", "TFC001", str(path), "--isolated", "-j1", "--no-cache"]) == 1
    new = [cell["source"] for cell in json.loads(path.read_text("utf-8"))["cells"]]
    joined = ["".join(source) for source in new]
    assert "import tfclip_compat" in joined[1] and "tfclip_compat.clip_gradients_by_norm(opt" in joined[3]
    assert "tf.contrib" not in joined[3] and joined[2] == "steps, big = 20, 2\nprint('ünïcode')"
    return new


@pytest.mark.parametrize("raw", LAYOUTS)
def test_fix_keeps_layout(tmp_path, monkeypatch, capsys, raw, reference):
    """`fix` applies TFC001 in any layout; the bytes outside the changed `source` values are
    identical, the new values decode to the reference sources in the cell's own form and escape
    style, unchanged lines keep their JSON text, and a second `fix` changes nothing."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nb.ipynb").write_bytes(raw)
    rc, out, err = run(capsys, "fix", "--select", "TFC001", "nb.ipynb")
    assert rc == 1 and "Rewriting nb.ipynb" in err and out == ""
    new_raw = (tmp_path / "nb.ipynb").read_bytes()
    bom = b"\xef\xbb\xbf" if raw.startswith(b"\xef\xbb\xbf") else b""
    assert new_raw.startswith(bom)
    old, new = raw[len(bom):].decode("utf-8"), new_raw[len(bom):].decode("utf-8")
    (s1, e1), (s2, e2) = value_spans(old)
    pattern = re.escape(old[:s1]) + "(.*)" + re.escape(old[e1:s2]) + "(.*)" + re.escape(old[e2:])
    match = re.fullmatch(pattern, new, re.DOTALL)
    assert match, "bytes outside the changed source values differ"
    as_string = isinstance(json.loads(old)["cells"][1]["source"], str)
    for group, index in ((1, 1), (2, 3)):
        value = match.group(group)
        expected = "".join(reference[index]) if as_string else reference[index]
        assert json.loads(value) == expected
        old_value = old[(s1, s2)[group - 1] : (e1, e2)[group - 1]]
        if "\\u00e9" in old_value:
            assert value.isascii(), "new lines escape non-ASCII as the file does"
        elif "café" in old_value:
            assert "café" in value, "new lines keep non-ASCII raw as the file does"
        if "\\u003e" in old_value:
            assert ">" not in value and "\\u003e 1 else" in value, "new lines escape `>` as the file does"
        if not as_string:  # each unchanged line keeps its JSON text and the whitespace after it
            items = list(re.finditer(r'"(?:[^"\\]|\\.)*"([ \t\r\n]*,[ \t\r\n]*)?', old_value))
            kept = [m.group(0) for m in items if m.group(1) and json.loads(m.group(0).rstrip(" \t\r\n,")) in expected]
            assert kept and all(token in value for token in kept)
    if "\r\n" in old:
        assert new.count("\n") == new.count("\r\n"), "a CRLF file stays CRLF"
    data = json.loads(new)
    assert data["cells"][2] == json.loads(old)["cells"][2]
    assert run(capsys, "fix", "--select", "TFC001", "nb.ipynb")[0] == 0
    assert (tmp_path / "nb.ipynb").read_bytes() == new_raw


@pytest.mark.parametrize("raw", [LAYOUTS[0], LAYOUTS[5]])
def test_check_counts_agree_with_fix(tmp_path, monkeypatch, capsys, raw):
    """The safe fixes `check` advertises are exactly the fixes `fix` applies, and after `fix`
    no safe fix is advertised."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nb.ipynb").write_bytes(raw)
    check = json.loads(run(capsys, "check", "--select", "TFC001", "--format", "json", "nb.ipynb")[1])["summary"]
    fixed = json.loads(run(capsys, "fix", "--select", "TFC001", "--format", "json", "nb.ipynb")[1])["summary"]
    assert check["safe_fixes_available"] == 1
    assert sum(entry["fixed"] for entry in fixed["findings_by_code"].values()) == 1
    assert fixed["safe_fixes_available"] == 0 and fixed["rewritten"] == 1


# --------------------------------------------------------------------------------------
# a notebook `fix` refuses advertises no fix, in `check` and in `fix`


def training_notebook(extra_cell: str = "") -> bytes:
    code = [IMPORTS, ["steps, big = 20, 2\n"], TRAIN] + ([[extra_cell]] if extra_cell else [])
    return json.dumps(document([{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                 "source": source} for source in code]), indent=1).encode()


def assert_nothing_advertised(out: str, err: str) -> None:
    assert "[*]" not in out and "[*unsafe]" not in out
    assert "fixes available" not in err and "fix available" not in err


@pytest.mark.parametrize("command", ["check", "fix"])
def test_unparsable_cell_means_no_fix_advertised(tmp_path, monkeypatch, capsys, command):
    """A cell that does not parse and could rebind `tf` withholds the drop-in fix: both commands
    say so at the TFC001 finding, and neither marks it fixable nor ends with "safe fix available"."""
    monkeypatch.chdir(tmp_path)
    raw = training_notebook("tf = None\nbucketized_latitude = \n")
    (tmp_path / "nb.ipynb").write_bytes(raw)
    rc, out, err = run(capsys, command, "--select", "TFC001,TFC900", "nb.ipynb")
    assert rc == 1 and (tmp_path / "nb.ipynb").read_bytes() == raw
    assert "nb.ipynb:cell 4:2:23: TFC900 cannot parse" in out
    assert "nb.ipynb:cell 3:6:11: TFC001 `tf.contrib.estimator.clip_gradients_by_norm`" in out
    assert "fix withheld: cell 4 (which does not parse) could rebind `tf`, which this fix reads" in out
    assert_nothing_advertised(out, err)


def _crossing_engine(monkeypatch, when):
    """Make the engine's rewrite (when ``when(options)``) indent the marker between cells 2 and 3,
    as a tape wrapping statements of both cells would."""
    import codemods.api

    real = codemods.api.migrate_source

    def engine(source, options, path="-", **kwargs):
        result = real(source, options, path=path, **kwargs)
        if when(options) and result.changed:
            result.code = result.code.replace("# tfclip-migrate:cell-boundary 3", "    # tfclip-migrate:cell-boundary 3")
        return result

    monkeypatch.setattr(codemods.api, "migrate_source", engine)


@pytest.mark.parametrize("command", ["check", "fix"])
def test_cell_boundary_refusal_known_to_check(tmp_path, monkeypatch, capsys, command):
    """When the rewrite cannot be written back cell by cell, `check` (which tries it without
    writing) reports the same TFC900 as `fix`, and neither advertises the fix."""
    monkeypatch.chdir(tmp_path)
    _crossing_engine(monkeypatch, lambda options: options.apply_fixes)
    raw = training_notebook()
    (tmp_path / "nb.ipynb").write_bytes(raw)
    rc, out, err = run(capsys, command, "--select", "TFC001,TFC900", "nb.ipynb")
    assert rc == 1 and (tmp_path / "nb.ipynb").read_bytes() == raw
    assert out.startswith("nb.ipynb:1:1: TFC900 fixes not applied: the rewrite indents code across the "
                          "boundary between cells 2 and 3")
    assert "nb.ipynb:cell 3:6:11: TFC001 `tf.contrib" in out
    assert_nothing_advertised(out, err)


def test_unsafe_fix_refused_only_with_unsafe_fixes(tmp_path, monkeypatch, capsys):
    """An unsafe fix is advertised ("add --unsafe-fixes") only if `fix --unsafe-fixes` could
    write it; the safe fix beside it stays advertised and is applied."""
    monkeypatch.chdir(tmp_path)
    _crossing_engine(monkeypatch, lambda options: options.apply_fixes and options.unsafe_fixes)
    raw = json.dumps(document([
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["legacy_clip(1)\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["x = 1\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["risky_clip(2)\n"]},
    ]), indent=1).encode()
    (tmp_path / "nb.ipynb").write_bytes(raw)

    def cli(*argv):
        rc = main([*argv, "nb.ipynb", "--isolated", "-j1", "--no-cache"], rules=_cli_rules.TEST_RULES)
        captured = capsys.readouterr()
        return rc, captured.out, captured.err

    rc, out, err = cli("check")
    assert rc == 1 and "nb.ipynb:1:1: TFC900 unsafe fixes cannot be applied: the rewrite indents code" in out
    assert "nb.ipynb:cell 1:1:1: TFC990 [*] " in out and "nb.ipynb:cell 3:1:1: TFC990 `risky_clip`" in out
    assert "1 safe fix available" in err and "unsafe fix" not in err
    rc, out, err = cli("fix")
    assert rc == 1 and "Rewriting nb.ipynb" in err and "unsafe fix" not in err
    assert "".join(json.loads((tmp_path / "nb.ipynb").read_text())["cells"][0]["source"]) == "modern_clip(1)\n"
    rc, out, err = cli("fix", "--unsafe-fixes")
    assert rc == 1 and "TFC900 fixes not applied: the rewrite indents code" in out and "Rewriting" not in err
    assert_nothing_advertised(out, err)


def test_splice_verified_before_writing(tmp_path, monkeypatch, capsys):
    """If the spliced JSON does not decode to the intended notebook, nothing is written and
    TFC900 names why (the check guards against a splicing bug)."""
    import codemods.notebooks.layout as layout

    monkeypatch.chdir(tmp_path)
    real = layout.splice_sources
    monkeypatch.setattr(layout, "splice_sources", lambda text, cells, new: real(text, cells, new).replace("steps", "stops"))
    raw = training_notebook()
    (tmp_path / "nb.ipynb").write_bytes(raw)
    rc, out, err = run(capsys, "fix", "--select", "TFC001,TFC900", "nb.ipynb")
    assert rc == 1 and (tmp_path / "nb.ipynb").read_bytes() == raw
    assert ("nb.ipynb:1:1: TFC900 fixes not applied: cannot write the cells back in the notebook's JSON layout: "
            "the cells written back in the notebook's own JSON layout do not decode to the intended notebook") in out
    assert_nothing_advertised(out, err)


# --------------------------------------------------------------------------------------
# the splicer on its own


def test_added_lines_in_empty_and_one_line_sources():
    """Lines added to an empty list or a one-line list are laid out like the file's other lists
    (json.dumps's layout for indent 1, 2 and 4, and for one-line JSON)."""
    from codemods.notebooks.layout import splice_sources

    for indent in (1, 2, 4, None):
        data = {"cells": [{"cell_type": "code", "source": []}, {"cell_type": "code", "source": ["x = 1"]}],
                "metadata": {}}
        text = json.dumps(data, indent=indent)
        new: Dict[int, str] = {1: "import a\nimport b\n", 2: "x = 1\ny = 2\n"}
        data["cells"][0]["source"] = ["import a\n", "import b\n"]
        data["cells"][1]["source"] = ["x = 1\n", "y = 2\n"]
        assert splice_sources(text, data["cells"], new) == json.dumps(data, indent=indent)


def test_scan_rejects_what_it_cannot_locate():
    """Text the scanner cannot follow is a LayoutError naming the line, not a wrong splice."""
    from codemods.notebooks.layout import LayoutError, scan_sources

    with pytest.raises(LayoutError, match="expected ':' at line 2"):
        scan_sources('{"cells": [{\n"source" ["x"]}]}')
    with pytest.raises(LayoutError, match="no top-level 'cells' list"):
        scan_sources('{"cells": {}}')
    spans = scan_sources('{"cells": [{"source": "a", "source": ["b", "c"]}, 3, {"source": [1]}]}')
    assert spans[0] is not None and spans[0].items is not None and len(spans[0].items) == 2  # the last key wins
    assert spans[1] is None and spans[2] is None
