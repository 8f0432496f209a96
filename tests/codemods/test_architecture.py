"""The layout keeps what docs/architecture.md promises: no import cycles in ``codemods/``, rules
written against the public API, tests split by side, and no reference to a module, test or file
that does not exist."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Set

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "codemods"

# Cycles that existed when the layout moved (each points at a type in the wrong place); the list
# only shrinks: a new cycle, or a bigger one, fails.
KNOWN_CYCLES: List[Set[str]] = []  # none left (the planner's helpers depend on tape/values.py's interface)


def _modules() -> Dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _import_graph(modules: Dict[str, Path]) -> Dict[str, Set[str]]:
    """Every import anywhere in each module (top level, in functions, under ``TYPE_CHECKING``)."""

    def resolve(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: Dict[str, Set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: List[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            for target in targets:
                resolved = resolve(target)
                if resolved and resolved != name:
                    graph[name].add(resolved)
    return graph


def _cycles(graph: Dict[str, Set[str]]) -> List[Set[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[Set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    """The cycle finder reports a two-module cycle and nothing for a chain (so the next test can fail)."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_new_import_cycle() -> None:
    """No import cycle in codemods/ beyond the known ones, which may only shrink."""
    cycles = _cycles(_import_graph(_modules()))
    unknown = [sorted(c) for c in cycles if not any(c <= known for known in KNOWN_CYCLES)]
    assert not unknown, f"new import cycles (a type lives in the wrong module): {unknown}"
    gone = [sorted(k) for k in KNOWN_CYCLES if not any(c & k for c in cycles)]
    assert not gone, f"these cycles are gone: remove them from KNOWN_CYCLES: {gone}"


def _rule_files() -> List[Path]:
    return sorted((PACKAGE / "rules").glob("tfc[0-9][0-9][0-9]_*.py"))


@pytest.mark.parametrize("path", _rule_files(), ids=lambda p: p.stem)
def test_rules_use_the_public_api(path: Path) -> None:
    """A rule imports the rule base, phases, fix safety and pre-pass specs from ``codemods.rules``,
    never from the engine's modules."""
    import codemods.rules as api

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("codemods.engine"):
            public = sorted(alias.name for alias in node.names if alias.name in api.__all__)
            assert not public, f"{path.name} imports {public} from {node.module}: use `from codemods.rules import ...`"


def test_public_api_names_resolve_and_no_submodule_shadows_them() -> None:
    """Every name in ``codemods.rules.__all__`` resolves, and no submodule of ``codemods.rules``
    has the same name (importing it would replace the public name on the package)."""
    import codemods.rules as api

    submodules = {p.stem for p in (PACKAGE / "rules").glob("*.py")} | {
        p.name for p in (PACKAGE / "rules").iterdir() if (p / "__init__.py").exists()}
    assert not set(api.__all__) & submodules
    for name in api.__all__:
        assert getattr(api, name) is not None


def test_no_underscore_name_imported_across_codemods_modules() -> None:
    """Modules of codemods/ import no private (``_name``) function, class or constant from another
    module; a name two modules share is public in the module that owns it."""
    offenders = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("codemods"):
                for alias in node.names:
                    if alias.name.startswith("_") and f"{node.module}.{alias.name}" not in _modules():
                        offenders.append(f"{name}: from {node.module} import {alias.name}")
    new = sorted(set(offenders) - KNOWN_PRIVATE_IMPORTS)
    assert not new, f"private names imported across modules (make them public where they live): {new}"
    gone = sorted(KNOWN_PRIVATE_IMPORTS - set(offenders))
    assert not gone, f"these private imports are gone: remove them from KNOWN_PRIVATE_IMPORTS: {gone}"


# Private names imported across modules (none now; a new one fails the test above).
KNOWN_PRIVATE_IMPORTS: Set[str] = set()


def test_codemod_tests_import_no_tensorflow() -> None:
    """Importing every test module of tests/codemods/ imports neither TensorFlow nor the shim, so a
    codemod-only run (``pytest tests/codemods``) does not pay for them."""
    names = sorted(p.stem for p in Path(__file__).parent.glob("test_*.py"))
    code = ("import sys\n" + "".join(f"import {n}\n" for n in names) +
            "bad = [m for m in ('tensorflow', 'tfclip_compat') if m in sys.modules]\n"
            "print(bad); sys.exit(1 if bad else 0)\n")
    env_path = f"{Path(__file__).parent}:{ROOT / 'tests'}:{ROOT}"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": env_path})
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --------------------------------------------------------------------------------------------------
# references in docstrings, comments and pages


_TEXT_FILES = [p for p in ROOT.rglob("*") if p.is_file() and p.suffix in (".py", ".md", ".yaml", ".toml")
               and not {".git", ".ci-venv", "fixtures", "node_modules"} & set(p.relative_to(ROOT).parts)
               and "egg-info" not in str(p) and ".venv" not in p.parts]
_PATH_REF = re.compile(r"(?<![\w./-])((?:codemods|tests|tools|docs|tfclip_compat|benchmarks|examples)/[\w/.-]*\w)")
_DOTTED_REF = re.compile(r"(?<![\w.])(codemods(?:\.\w+)+)")
# Paths that exist only while something runs: the benchmarks' output folder (git-ignored) and
# the files CONTRIBUTING.md's walkthrough creates (``<!-- file: PATH -->``; a test adds them).
_TRANSIENT = ("benchmarks/out/",)


def _prose(path: Path) -> str:
    """What a file says to a reader: a page whole; of a Python file, its docstrings and comments."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".py":
        return text
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    pieces = [ast.get_docstring(node, clean=False) or "" for node in ast.walk(tree)
              if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    pieces += [line.split("#", 1)[1] for line in text.splitlines() if "#" in line]
    return "\n".join(pieces)


def _walkthrough_files() -> Set[str]:
    guide = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    created = set(re.findall(r"<!-- file: (\S+) -->", guide))
    return created | {f"docs/rules/{Path(f).stem.split('_')[0].upper()}.md" for f in created if f.endswith(".py")}


def _references() -> Iterator[tuple]:
    for path in _TEXT_FILES:
        text = _prose(path)
        for match in _PATH_REF.finditer(text):
            if text[match.end():match.end() + 1] not in ("[", "*", "<", "{"):
                yield path, "path", match.group(1)
        for match in _DOTTED_REF.finditer(text):
            yield path, "module", match.group(1)


def test_reference_finder_finds_references() -> None:
    """The reference scan sees this project's own references (so the next test can fail)."""
    refs = {(kind, ref) for _, kind, ref in _references()}
    assert ("module", "codemods.engine.registry") in refs
    assert ("path", "tests/codemods/test_architecture.py") in refs  # docs/architecture.md


def test_every_referenced_module_test_and_file_exists() -> None:
    """Every ``codemods.x.y`` module (or module attribute) and every repository path a docstring,
    comment or page names exists."""
    modules = _modules()
    walkthrough = _walkthrough_files()
    packages = {name.split(".")[1] for name in modules if "." in name}
    missing = []
    for path, kind, ref in _references():
        where = path.relative_to(ROOT)
        if kind == "path":
            target = ref.split("::")[0].rstrip(".")
            if target.startswith(_TRANSIENT) or target in walkthrough:
                continue
            if not (ROOT / target).exists():
                missing.append(f"{where}: {ref}")
            continue
        parts = ref.split(".")
        if parts[1] not in packages and not parts[1].startswith("_"):
            continue  # a variable called `codemods` (``codemods.append``), not the package
        for cut in range(len(parts), 0, -1):
            if ".".join(parts[:cut]) in modules:
                break
        rest = parts[cut:]
        if cut == 1 and rest:
            missing.append(f"{where}: {ref} (no such module)")
        elif rest:
            source = modules[".".join(parts[:cut])].read_text(encoding="utf-8")
            if not re.search(rf"\b{re.escape(rest[0])}\b", source):
                missing.append(f"{where}: {ref} ({rest[0]} is not in {'.'.join(parts[:cut])})")
    assert not missing, "\n".join(sorted(set(missing)))


def test_registry_discovers_only_its_own_rules(tmp_path: Path) -> None:
    """Run from a project with its own ``codemods`` folder (a namespace package that shadows the
    name ``codemods`` for a plain import), ``python -m codemods.cli rules`` still lists exactly the
    rules shipped beside the registry (it used to walk the user's folder and crash)."""
    user = tmp_path / "codemods"
    user.mkdir()
    (user / "tfc999_user_rule.py").write_text("raise SystemExit('the user module was imported')\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    installed = subprocess.run([sys.executable, "-c", "import codemods.cli.app"], cwd=tmp_path, env=env,
                               capture_output=True, timeout=60).returncode == 0
    if not installed:  # e.g. a checkout run with PYTHONPATH instead of `pip install -e .`
        env["PYTHONPATH"] = f"{tmp_path}:{ROOT}"
    proc = subprocess.run([sys.executable, "-m", "codemods.cli", "rules"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "TFC101" in proc.stdout and "TFC999" not in proc.stdout


# Attributes of Python's own types that start with an underscore (``ast`` node classes' ``_fields``,
# namedtuples' API): not ours, so not a private name of another module.
_PYTHON_UNDERSCORE_API = frozenset({"_fields", "_replace", "_asdict", "_make", "_field_defaults"})


def _private_calls_across_modules(sources: Dict[str, str]) -> List[str]:
    """``receiver._name`` where ``_name`` is a private function, method or class defined (``def`` /
    ``class``) in another of ``sources``' modules and not in this one; ``self._x`` and ``cls._x``
    are the class's own business and not counted."""
    trees = {name: ast.parse(text) for name, text in sources.items()}
    defined: Dict[str, Set[str]] = {}
    for name, tree in trees.items():
        defined[name] = {node.name for node in ast.walk(tree)
                         if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                         and node.name.startswith("_") and not node.name.startswith("__")}
    everywhere = set().union(*defined.values()) if defined else set()
    found = []
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr in everywhere - defined[name]):
                continue
            if node.attr in _PYTHON_UNDERSCORE_API:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_private_call_finder_finds_one() -> None:
    """The finder reports a private method called from another module, and not a module's own
    use of it or ``self._x`` (so the next test can fail)."""
    sources = {
        "a": "class A:\n    def _helper(self):\n        return self._helper()\n",
        "b": "def use(analyzer):\n    return analyzer._helper()\n",
        "c": "def own(x):\n    return x._own()\ndef _own():\n    pass\n",
    }
    assert _private_calls_across_modules(sources) == ["b:2: analyzer._helper"]


def test_no_private_function_called_from_another_module() -> None:
    """What one module calls on another's objects is public: a private method stays inside the
    module that defines it (an import of a private name is caught by the import checks)."""
    sources = {name: path.read_text(encoding="utf-8") for name, path in _modules().items()}
    found = _private_calls_across_modules(sources)
    assert not found, f"private names used from another module (make them public): {found}"


def test_no_mixins_in_the_planner() -> None:
    """The planner is objects passed what they need: no ``*Mixin`` class anywhere in
    ``codemods/``, and the analyzer and the planner derive from nothing."""
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                assert not node.name.endswith("Mixin"), f"{name}: class {node.name}"
    from codemods.rules.tape.effects import Analyzer
    from codemods.rules.tape.planner import Planner

    assert Analyzer.__bases__ == (object,) and Planner.__bases__ == (object,)
