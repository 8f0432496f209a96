"""One documentation page per rule, generated from the rule files: ``docs/rules/<CODE>.md``
and the index ``docs/rules/README.md``.

Each page is the text ``tfclip-migrate rules CODE`` prints -- ``CODE (name)`` as its title,
then the rule's docstring verbatim (ruff's headings: What it does / Why is this bad? /
Example / Use instead / Fix safety) -- with the summary, the phase, the kinds of fix the
*Fix safety* section names and a link to the source between the two. The index is a table:
code, name, summary, fix.

The rule files are read with :mod:`ast`, not imported: this module imports neither libcst
nor TensorFlow, so the pages can be (re)generated and checked in any environment. That
asks one thing of a rule file: its class body spells ``CODE``, ``NAME`` and ``SUMMARY`` as
string literals (``PHASE`` as ``Phase.<NAME>``), which every rule does.
``tests/test_rule_pages.py`` proves each page carries exactly what ``tfclip-migrate rules``
prints, in the order it lists the rules, and fails when a page is stale::

    python -m tools.rule_pages           # write docs/rules/ (and remove pages of codes gone)
    python -m tools.rule_pages --check   # exit 1 when docs/rules/ is not what the rules say
"""

from __future__ import annotations

import ast
import os
import re
import sys
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from codemods.engine.core import RULE_MODULE, Phase

GENERATOR = "python -m tools.rule_pages"
_PAGE = re.compile(r"^TFC\d{3}\.md$")
# The words of a "## Fix safety" section that name a kind of fix (codemods.engine.core.FixSafety);
# "unsafe" is a word of its own, so \bsafe\b never matches inside it.
_FIX_KINDS = (("safe", re.compile(r"\bsafe\b", re.I)), ("unsafe", re.compile(r"\bunsafe\b", re.I)),
              ("no fix", re.compile(r"\bno fix\b", re.I)))
_PHASE_WORDS = {Phase.TF2_FORM: "TF 2 form (runs first)", Phase.REPORT: "report (runs second)",
                Phase.COMPAT: "compat form (runs last)"}


class RuleDocError(ValueError):
    """A rule file the generator cannot read without importing it."""


class RuleDoc(NamedTuple):
    """What a rule's page is made of, read from its file."""

    code: str
    name: str
    summary: str
    phase: Optional[Phase]  # None: documentation only (TFC900), not a codemod
    doc: str  # the docstring, cleaned as inspect.cleandoc does (what `rules CODE` prints)
    path: str  # the rule file, relative to the repository root, with "/" separators

    @property
    def cli_text(self) -> str:
        """What ``tfclip-migrate rules CODE`` prints (``codemods.cli._cmd_rules``)."""
        return f"{self.code} ({self.name})\n\n{self.doc or self.summary}\n"

    @property
    def fix(self) -> str:
        """The kinds of fix the *Fix safety* section names, e.g. ``safe / unsafe``."""
        section = self.doc.split("## Fix safety", 1)[1] if "## Fix safety" in self.doc else ""
        kinds = [kind for kind, word in _FIX_KINDS if word.search(section)]
        if not kinds:
            raise RuleDocError(f"{self.path}: {self.code}'s '## Fix safety' section names no kind of fix; "
                               "say 'Safe', 'Unsafe' and/or 'No fix' there")
        return " / ".join(kinds)


def repo_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _literal(cls: ast.ClassDef, attr: str) -> Optional[ast.expr]:
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in stmt.targets):
            return stmt.value
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == attr:
            return stmt.value
    return None


def _string(cls: ast.ClassDef, attr: str, path: str) -> str:
    node = _literal(cls, attr)
    try:
        value = ast.literal_eval(node) if node is not None else None
    except ValueError:
        value = None
    if not isinstance(value, str):
        raise RuleDocError(f"{path}: class {cls.name}: {attr} must be a string literal in the class body "
                           f"({GENERATOR} reads the rule files without importing them)")
    return value


def _phase(cls: ast.ClassDef, path: str) -> Optional[Phase]:
    node = _literal(cls, "PHASE")
    if node is None:
        return None
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Phase"
            and node.attr in Phase.__members__):
        return Phase[node.attr]
    raise RuleDocError(f"{path}: class {cls.name}: PHASE must be spelled Phase.<NAME> in the class body "
                       f"({GENERATOR} reads the rule files without importing them)")


def read_rules(package_dir: Optional[str] = None) -> List[RuleDoc]:
    """Every rule of the ``tfcNNN_*.py`` files in ``package_dir`` (default: this package), in
    the order ``tfclip-migrate rules`` lists them: the codemods by ``(PHASE, CODE)``, then
    the documentation-only rules by code."""
    package_dir = package_dir or os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(package_dir)
    found: List[RuleDoc] = []
    for filename in sorted(os.listdir(package_dir)):
        stem, ext = os.path.splitext(filename)
        if ext != ".py" or not RULE_MODULE.match(stem):
            continue
        full = os.path.join(package_dir, filename)
        path = os.path.relpath(full, root).replace(os.sep, "/")
        with open(full, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), filename=path)
        for cls in tree.body:
            if isinstance(cls, ast.ClassDef) and _literal(cls, "CODE") is not None:
                found.append(RuleDoc(_string(cls, "CODE", path), _string(cls, "NAME", path),
                                     _string(cls, "SUMMARY", path), _phase(cls, path),
                                     ast.get_docstring(cls, clean=True) or "", path))
    codemods = sorted((r for r in found if r.phase is not None), key=lambda r: (int(r.phase), r.code))
    others = sorted((r for r in found if r.phase is None), key=lambda r: r.code)
    return codemods + others


def _header(source: str) -> str:
    return f"<!-- GENERATED by `{GENERATOR}` from {source}: do not edit. -->\n"


def render_page(rule: RuleDoc) -> str:
    """``docs/rules/<CODE>.md``: the ``rules CODE`` text, with a few facts under its title."""
    title, _, body = rule.cli_text.partition("\n\n")
    phase = _PHASE_WORDS[rule.phase] if rule.phase is not None else "reported by the CLI itself (not a codemod)"
    facts = [
        f"**Summary:** {rule.summary}",
        f"**Fix:** {rule.fix} (when each applies: *Fix safety* below)",
        f"**Phase:** {phase}",
        f"**Source:** [{rule.path}](../../{rule.path}) · all rules: [index](README.md)",
    ]
    return _header(f"`{rule.path}`") + f"\n# {title}\n\n" + "  \n".join(facts) + "\n\n" + body


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_index(rules: Sequence[RuleDoc]) -> str:
    """``docs/rules/README.md``: one row per rule, in ``tfclip-migrate rules`` order."""
    lines = [
        _header("the rule files (`codemods/rules/tfcNNN_*.py`)"),
        "# The rules, one page each",
        "",
        "The text `tfclip-migrate rules CODE` prints, one page per rule, in the order the rules run",
        "(TF 2 form, then reports, then the compat form; TFC900 is reported by the CLI itself).",
        "*fix* lists the kinds of fix a rule's *Fix safety* section names; only safe fixes are",
        "applied unless `--unsafe-fixes` is given. What the rewrites prove: [../rules.md](../rules.md).",
        "",
        "| code | name | summary | fix |",
        "|---|---|---|---|",
    ]
    for rule in rules:
        lines.append(f"| [{rule.code}]({rule.code}.md) | `{rule.name}` | {_cell(rule.summary)} | {rule.fix} |")
    return "\n".join(lines) + "\n"


def render_all(rules: Optional[Sequence[RuleDoc]] = None) -> Dict[str, str]:
    """File name (in ``docs/rules/``) -> text, for every page and the index."""
    rules = read_rules() if rules is None else rules
    pages = {f"{rule.code}.md": render_page(rule) for rule in rules}
    pages["README.md"] = render_index(rules)
    return pages


def docs_dir() -> str:
    return os.path.join(repo_root(), "docs", "rules")


def differences(out_dir: str, pages: Dict[str, str]) -> Tuple[List[str], List[str]]:
    """``(stale, extra)``: pages missing or different on disk, and ``TFCnnn.md`` pages on disk
    for codes no rule has."""
    stale = []
    for name, text in sorted(pages.items()):
        try:
            with open(os.path.join(out_dir, name), encoding="utf-8", newline="") as handle:
                current = handle.read()
        except OSError:
            current = None
        if current != text:
            stale.append(name)
    on_disk = os.listdir(out_dir) if os.path.isdir(out_dir) else []
    extra = sorted(name for name in on_disk if _PAGE.match(name) and name not in pages)
    return stale, extra


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m tools.rule_pages [--check]``: write (or check) ``docs/rules/``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args not in ([], ["--check"]):
        sys.stderr.write(f"usage: {GENERATOR} [--check]\n")
        return 2
    try:
        pages = render_all()
    except (RuleDocError, SyntaxError) as exc:
        sys.stderr.write(f"{GENERATOR}: {exc}\n")
        return 2
    out_dir = docs_dir()
    stale, extra = differences(out_dir, pages)
    if args == ["--check"]:
        if stale or extra:
            sys.stderr.write(f"{out_dir} is stale ({', '.join(stale + extra)}): run {GENERATOR}\n")
            return 1
        return 0
    os.makedirs(out_dir, exist_ok=True)
    for name in stale:
        with open(os.path.join(out_dir, name), "w", encoding="utf-8", newline="\n") as handle:
            handle.write(pages[name])
        sys.stderr.write(f"wrote {os.path.join(out_dir, name)}\n")
    for name in extra:
        os.remove(os.path.join(out_dir, name))
        sys.stderr.write(f"removed {os.path.join(out_dir, name)} (no rule has that code)\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
