"""Measure ``tfclip-migrate`` on a real-world corpus of public TF1 repositories.

Usage::

    python benchmarks/corpus.py --corpus /work/corpus                 # measure; write the report
    python benchmarks/corpus.py --corpus /work/corpus --out benchmarks/out/corpus.md --jobs 2
    python benchmarks/corpus.py --corpus /work/corpus --build MIRRORS # (re)build the corpus, then exit
    python benchmarks/corpus.py --record MIRRORS                      # maintainers: pin the manifest

The corpus (third-party code, never committed) is described by ``benchmarks/corpus_manifest.json``:
one entry per repository (``owner/name``, the pinned commit, what kind of code it is, and how many
``.py`` / ``.ipynb`` files it contributes). ``--build MIRRORS`` extracts exactly those files from
git mirrors of the repositories (``MIRRORS/owner+name/repo[/.git]``, as the search tool's ``fetch``
leaves them, or plain clones at ``MIRRORS/owner+name`` / ``MIRRORS/owner/name``) into
``CORPUS/owner__name/``; nothing is downloaded. See ``docs/corpus.md``.

The measurement runs the installed command as a user would (the ``tfclip-migrate`` next to this
Python), on copies of the corpus, never on the corpus itself:

1. ``check --format json`` -- findings and their positions in the original files;
2. ``fix --format json`` (safe fixes) -- applied fixes; every file is then parsed again;
3. ``fix`` again -- must change nothing (idempotent);
4. ``fix --unsafe-fixes`` twice on a second copy (skip with ``--no-unsafe``).

An independent ``ast`` scanner (``_corpus_scan.py``, never imports ``codemods``) finds the training
sites before and the removed clipping APIs left after ``fix``. The report (markdown, plus the raw
data as JSON beside it) gives crashes, outputs that no longer parse, non-idempotent files,
rewritten / reported / silently missed files and sites, the files ``fix`` made eager (no session,
no placeholder left) beside those left in the tape form, per repository too, removed contrib calls
left, the decline reasons ranked, the silent-miss shapes ranked, and time per phase. Nothing here asserts a figure.

Longer than ~400 lines because it is one pipeline whose stages share the per-file records; the
markdown rendering lives in ``_corpus_report.py``, the scanner in ``_corpus_scan.py``.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import _corpus_report  # noqa: E402 - benchmarks/ is not a package
from _corpus_scan import ScanResult, Site, scan_file  # noqa: E402

MANIFEST = HERE / "corpus_manifest.json"
DEFAULT_OUT = HERE / "out" / "corpus.md"
TOOL = Path(sys.executable).parent / "tfclip-migrate"
SUFFIXES = (".py", ".ipynb")
# Directories the CLI never enters during a walk (README, "What is walked"): files below them are
# inventoried but not expected to be processed.
CLI_SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", "venv", ".venv", "site-packages", "build", "dist", "__pycache__", ".tox",
    ".nox", ".ipynb_checkpoints", "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache",
})
STATUS_ORDER = {"missed": 0, "elsewhere": 1, "reported": 2, "rewritten": 3}
_ERROR_LINE = re.compile(r"^tfclip-migrate: error: (?P<path>.+?): (?P<reason>.*)$")
_RUN_ERROR = re.compile(r"^tfclip-migrate: internal error: .*$", re.M)
_REWRITING = re.compile(r"^Rewriting (?P<path>.+)$", re.M)
_SCANNED = re.compile(r"(\d+) files? scanned.*?\((\d+) parsed")


class CorpusError(Exception):
    """Bad input (missing corpus, mirror, manifest entry): the message says what to do."""


# --------------------------------------------------------------------------------------------
# the manifest: build the corpus from mirrors, or pin the mirrors' commits


def load_manifest(path: Path = MANIFEST) -> List[Dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorpusError(f"{path}: cannot read the manifest ({exc}); restore it from git") from None
    return data["repos"]


def corpus_dirname(repo: str) -> str:
    return repo.replace("/", "__")


def find_git_dir(mirrors: Path, repo: str) -> Path:
    owner, name = repo.split("/", 1)
    for cand in (mirrors / f"{owner}+{name}" / "repo" / ".git", mirrors / f"{owner}+{name}" / "repo",
                 mirrors / f"{owner}+{name}" / ".git", mirrors / f"{owner}+{name}", mirrors / owner / name / ".git",
                 mirrors / owner / name):
        if (cand / "HEAD").is_file() and (cand / "objects").is_dir():
            return cand
    raise CorpusError(
        f"{repo}: no git mirror under {mirrors} (looked for {owner}+{name}/repo[/.git] and {owner}/{name}); "
        f"fetch it first (see docs/corpus.md: the search tool's `fetch github:{repo}`, or "
        f"`git clone https://github.com/{repo} {mirrors}/{owner}+{name}`)"
    )


def _git(git_dir: Path, *args: str, data: Optional[bytes] = None) -> bytes:
    proc = subprocess.run(["git", f"--git-dir={git_dir}", *args], input=data, capture_output=True)
    if proc.returncode != 0:
        raise CorpusError(f"git {' '.join(args[:2])} failed in {git_dir}: {proc.stderr.decode(errors='replace')}")
    return proc.stdout


def corpus_members(git_dir: Path, commit: str, exclude: Sequence[str] = ()) -> List[Tuple[str, str]]:
    """(path, blob sha) of every regular ``.py`` / ``.ipynb`` file of ``commit`` not matching an ``exclude`` glob."""
    out = []
    for entry in _git(git_dir, "ls-tree", "-r", "-z", "--full-tree", commit).split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        mode, kind, sha = meta.split()
        name = path.decode("utf-8", errors="surrogateescape")
        if kind == b"blob" and mode in (b"100644", b"100755") and name.endswith(SUFFIXES):
            if not any(fnmatch.fnmatchcase(name, pattern) for pattern in exclude):
                out.append((name, sha.decode()))
    return sorted(out)


def available_members(git_dir: Path, commit: str, exclude: Sequence[str] = ()) -> List[Tuple[str, str]]:
    """:func:`corpus_members` whose content the mirror holds (snapshots leave out files of 4 MiB and more)."""
    members = corpus_members(git_dir, commit, exclude)
    check = _git(git_dir, "cat-file", "--batch-check", data="".join(f"{sha}\n" for _, sha in members).encode())
    present = {line.split()[0] for line in check.decode().splitlines() if not line.endswith("missing")}
    return [(path, sha) for path, sha in members if sha in present]


def build_corpus(mirrors: Path, corpus: Path, manifest: List[Dict[str, Any]]) -> Dict[str, int]:
    """Extract every manifest repository's pinned ``.py``/``.ipynb`` files into ``corpus``; return counts."""
    corpus.mkdir(parents=True, exist_ok=True)
    written: Dict[str, int] = {}
    for entry in manifest:
        repo, commit = entry["repo"], entry["commit"]
        git_dir = find_git_dir(mirrors, repo)
        try:
            _git(git_dir, "cat-file", "-e", f"{commit}^{{commit}}")
        except CorpusError:
            raise CorpusError(f"{repo}: the mirror {git_dir} lacks the pinned commit {commit}; fetch a newer "
                              f"snapshot, or re-pin with --record") from None
        members = available_members(git_dir, commit, entry.get("exclude", ()))
        target = corpus / corpus_dirname(repo)
        if target.exists():
            shutil.rmtree(target)
        batch = _git(git_dir, "cat-file", "--batch", data="".join(f"{sha}\n" for _, sha in members).encode())
        count, pos = 0, 0
        for path, sha in members:
            header_end = batch.index(b"\n", pos)
            header = batch[pos:header_end].split()
            size = int(header[2])
            blob = batch[header_end + 1: header_end + 1 + size]
            pos = header_end + 2 + size
            dest = target / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(blob)
            count += 1
        written[repo] = count
        if count != entry.get("files", count):
            print(f"corpus: warning: {repo}: {count} files extracted, the manifest says {entry['files']}",
                  file=sys.stderr)
    return written


def record_manifest(mirrors: Path, path: Path = MANIFEST) -> None:
    """Pin every manifest entry to its mirror's HEAD and recount its files (new entries need only repo + kind).

    An entry with a ``pin`` (the reason it is not at HEAD) keeps its ``commit``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for entry in data["repos"]:
        git_dir = find_git_dir(mirrors, entry["repo"])
        commit = entry["commit"] if entry.get("pin") else _git(git_dir, "rev-parse", "HEAD").decode().strip()
        members = available_members(git_dir, commit, entry.get("exclude", ()))
        entry.update(commit=commit, date=_git(git_dir, "log", "-1", "--format=%cs", commit).decode().strip(),
                     files=len(members), notebooks=sum(p.endswith(".ipynb") for p, _ in members))
    data["repos"].sort(key=lambda e: e["repo"].lower())
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------------------------
# running the command


@dataclass
class Phase:
    """One run of the command over a whole tree."""

    name: str
    argv: List[str]
    rc: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    findings: List[Dict[str, Any]] = field(default_factory=list)
    rewritten: Set[str] = field(default_factory=set)
    file_errors: Dict[str, str] = field(default_factory=dict)  # path -> reason (internal errors, write errors)
    run_errors: List[str] = field(default_factory=list)  # whole-run failures: tracebacks, internal errors
    scanned: Optional[int] = None
    parsed: Optional[int] = None


def run_command(argv: Sequence[str], cwd: Path, timeout: float) -> Tuple[int, str, str, float, float, bool]:
    """(rc, stdout, stderr, wall s, CPU s of the command and its workers, timed out)."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONDONTWRITEBYTECODE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    child = subprocess.Popen(list(argv), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    timed_out = False
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return (child.returncode, out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace"),
            wall, cpu, timed_out)


def run_phase(name: str, args: Sequence[str], cwd: Path, timeout: float, tool: Sequence[str]) -> Phase:
    """Run ``tool args .`` in ``cwd``; if the whole run fails, re-run per top-level directory to name the culprit."""
    phase = Phase(name=name, argv=[*args, "."])
    phase.rc, phase.stdout, phase.stderr, phase.wall, phase.cpu, phase.timed_out = run_command(
        [*tool, *args, "."], cwd, timeout)
    _parse_output(phase, phase.stdout, phase.stderr)
    if phase.timed_out:
        phase.run_errors.append(f"timed out after {timeout:.0f} s")
    if phase.run_errors:  # attribute the failure: one run per top-level directory
        for sub in sorted(p.name for p in cwd.iterdir() if p.is_dir()):
            rc, out, err, _, _, timed_out = run_command([*tool, *args, sub], cwd, timeout)
            part = Phase(name=name, argv=[*args, sub])
            _parse_output(part, out, err)
            if timed_out:
                phase.file_errors.setdefault(sub + "/", f"timed out after {timeout:.0f} s (whole directory)")
            for error in part.run_errors:
                phase.file_errors.setdefault(sub + "/", f"whole-run failure: {error}")
            phase.file_errors.update(part.file_errors)
            if not phase.findings or phase.timed_out:
                phase.findings.extend(part.findings)
                phase.rewritten |= part.rewritten
    return phase


def _parse_output(phase: Phase, stdout: str, stderr: str) -> None:
    """Read one run's output: ``--format json`` is either a bare array of findings (the first CLI) or
    the schema-1 document ``{"findings", "files", "errors", "summary", ...}`` (docs/cli.md); the
    stderr lines ``Rewriting PATH`` / ``tfclip-migrate: error: PATH: REASON`` and the summary are
    read too, so either CLI is measured the same way."""
    try:
        doc = json.loads(stdout) if stdout.strip() else []
    except ValueError:
        doc = None
        phase.run_errors.append("stdout is not a JSON document")
    if isinstance(doc, list):
        phase.findings = doc
    elif isinstance(doc, dict):
        phase.findings = list(doc.get("findings") or [])
        for entry in doc.get("files") or []:
            if entry.get("status") == "rewritten":
                phase.rewritten.add(entry["path"])
            elif entry.get("status") == "failed":
                phase.file_errors[entry["path"]] = entry.get("reason") or "failed"
        for error in doc.get("errors") or []:
            if error.get("path"):
                phase.file_errors.setdefault(error["path"], error.get("message", ""))
            else:
                phase.run_errors.append(f"error: {error.get('message', '')}")
        if doc.get("interrupted"):
            phase.run_errors.append(f"interrupted by {doc.get('signal') or 'a signal'}")
        summary = doc.get("summary") or {}
        if "scanned" in summary:
            phase.scanned, phase.parsed = summary.get("scanned"), summary.get("parsed")
    elif doc is not None:
        phase.run_errors.append("the JSON document is neither a list nor an object")
    for line in stderr.splitlines():
        match = _ERROR_LINE.match(line)
        if match:
            phase.file_errors.setdefault(match.group("path"), match.group("reason"))
    phase.run_errors.extend(m.group(0) for m in _RUN_ERROR.finditer(stderr))
    if "Traceback (most recent call last)" in stderr:
        phase.run_errors.append("a Python traceback on stderr: " + stderr.strip().splitlines()[-1][:300])
    phase.rewritten |= {m.group("path") for m in _REWRITING.finditer(stderr)}
    match = _SCANNED.search(stderr)
    if match and phase.scanned is None:
        phase.scanned, phase.parsed = int(match.group(1)), int(match.group(2))


# --------------------------------------------------------------------------------------------
# the corpus on disk


def inventory(corpus: Path) -> Tuple[List[str], List[str]]:
    """(files the CLI walks, files under directories the CLI never enters), as sorted posix paths."""
    walked, skipped = [], []
    for root, dirs, files in os.walk(corpus):
        rel_root = Path(root).relative_to(corpus)
        excluded = any(part in CLI_SKIPPED_DIRS for part in rel_root.parts) or (Path(root) / "pyvenv.cfg").exists()
        for name in files:
            if name.endswith(SUFFIXES) and not (Path(root) / name).is_symlink():
                (skipped if excluded else walked).append((rel_root / name).as_posix())
    return sorted(walked), sorted(skipped)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def scan_tree_files(root: Path, files: Sequence[str]) -> Dict[str, ScanResult]:
    return {rel: scan_file(rel, (root / rel).read_bytes()) for rel in files}


def notebook_cells_parse(data: bytes) -> Optional[Dict[int, bool]]:
    """cell -> parses with ast, for a notebook (None: not valid notebook JSON)."""
    from _corpus_scan import mask_ipython, notebook_cells, parse_python

    try:
        json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError):
        return None
    out = {}
    for number, src in notebook_cells(data):
        masked = mask_ipython(src)
        if masked is not None:
            out[number] = parse_python(masked)[0] is not None
    return out


def broken_outputs(before_root: Path, after_root: Path, files: Sequence[str], changed: Set[str]) -> Dict[str, str]:
    """Files (or notebook cells) that parsed with CPython before ``fix`` and do not after it."""
    from _corpus_scan import decode, parse_python

    broken = {}
    for rel in sorted(changed):
        if rel not in files:
            continue
        old, new = (before_root / rel).read_bytes(), (after_root / rel).read_bytes()
        if rel.endswith(".ipynb"):
            cells_old, cells_new = notebook_cells_parse(old), notebook_cells_parse(new)
            if cells_old is not None and cells_new is None:
                broken[rel] = "the notebook is no longer valid JSON"
            elif cells_old is not None and cells_new is not None:
                bad = [n for n, ok in cells_old.items() if ok and not cells_new.get(n, False)]
                if bad:
                    broken[rel] = f"cell(s) {', '.join(map(str, bad))} no longer parse"
            continue
        text_old, text_new = decode(old), decode(new)
        if text_old is None or parse_python(text_old)[0] is None:
            continue
        if text_new is None:
            broken[rel] = "the output can no longer be decoded"
            continue
        _, error = parse_python(text_new)
        if error is not None:
            broken[rel] = f"{error.msg} (line {error.lineno})"
    return broken


def _names(text: str) -> Optional[Tuple[Set[str], Set[str]]]:
    """(every name and ``obj.attr`` the module binds anywhere, every one it reads), or None if it does not parse."""
    import ast

    from _corpus_scan import parse_python

    tree, _ = parse_python(text)
    if tree is None:
        return None
    bound: Set[str] = set()
    read: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            # `self.gvs = ...` in one method, `sess.run(self.gvs)` in another
            (read if isinstance(node.ctx, ast.Load) else bound).add(f"{node.value.id}.{node.attr}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
    return bound, read


def _program_text(rel: str, data: bytes) -> Optional[str]:
    """A file's code as one module: a notebook's code cells joined (IPython lines masked)."""
    from _corpus_scan import decode, mask_ipython, notebook_cells

    if rel.endswith(".ipynb"):
        cells = [mask_ipython(src) for _, src in notebook_cells(data)]
        return "\n".join(c for c in cells if c is not None)
    return decode(data)


def dangling_names(before_root: Path, after_root: Path, changed: Set[str]) -> Dict[str, List[str]]:
    """Rewritten files that read a name the rewrite no longer binds (a ``NameError`` when that line runs)."""
    out = {}
    for rel in sorted(changed):
        old = _program_text(rel, (before_root / rel).read_bytes())
        new = _program_text(rel, (after_root / rel).read_bytes())
        old_names = _names(old) if old is not None else None
        new_names = _names(new) if new is not None else None
        if old_names is None or new_names is None:
            continue
        lost = (new_names[1] - new_names[0]) & old_names[0]
        if lost:
            out[rel] = sorted(lost)
    return out


# --------------------------------------------------------------------------------------------
# classification


def _by_path(rows: Sequence[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    out: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
    for row in rows:
        out[row["path"]].append(row)
    return out


def unit_spans(sites: Sequence[Site]) -> Dict[int, List[Tuple[Optional[int], int, int]]]:
    """unit -> (cell, first line, last line) spans: one per site, plus, for a unit whose sites sit in one
    cell, the whole stretch from its first to its last statement (a finding on the clipping statement
    between ``compute_gradients`` and ``apply_gradients`` is about that unit)."""
    spans: Dict[int, List[Tuple[Optional[int], int, int]]] = defaultdict(list)
    members: Dict[int, List[Site]] = defaultdict(list)
    for site in sites:
        members[site.unit].append(site)
        spans[site.unit].append((site.cell, site.first, site.last))
    for unit, group in members.items():
        if len(group) > 1 and len({s.cell for s in group}) == 1:
            spans[unit].append((group[0].cell, min(s.first for s in group), max(s.last for s in group)))
    return spans


# Whole-program rules: an applied finding rewrites the file as one program (TFC301: a session script
# made eager), so it covers every training unit of the file, wherever the finding itself sits.
WHOLE_PROGRAM_CODES = ("TFC301",)


def _is_verdict(row: Dict[str, Any]) -> bool:
    """A gradient-site verdict: a TF 2 rewrite (TFC101-TFC103) or a decline (TFC202)."""
    return row["code"] in ("TFC101", "TFC102", "TFC103", "TFC202")


def classify(before: Dict[str, ScanResult], check: Phase, fix: Phase, allowed: Tuple[str, ...]) -> Dict[str, Any]:
    """Per file and per site: rewritten / reported / missed, for one fix mode."""
    check_rows = _by_path([r for r in check.findings if r["code"] != "TFC900"])
    applied = {path: Counter(r["code"] for r in rows if r.get("applied")) for path, rows in _by_path(fix.findings).items()}
    files: Dict[str, str] = {}
    sites: List[Tuple[str, Site, str]] = []
    for rel, result in before.items():
        counted = result.counted_sites
        if not counted:
            continue
        rows = check_rows.get(rel, [])
        status_of_unit: Dict[int, str] = {}
        used: Set[int] = set()
        whole_program = any(r["code"] in WHOLE_PROGRAM_CODES and r["fix"] in allowed
                            and applied.get(rel, {}).get(r["code"]) for r in rows)
        for unit, spans in unit_spans(counted).items():
            covering = [r for r in rows if any(r.get("cell") == cell and first <= r["line"] <= last
                                               for cell, first, last in spans)]
            # The tool gives each gradient site one verdict (a plan or a decline): a second verdict on the
            # same statements belongs to another site whose decline was placed here (see below).
            verdicts = sorted((r for r in covering if _is_verdict(r)),
                              key=lambda r: (not r.get("applied"), r["fix"] == "none", r["line"]))
            covering = [r for r in covering if not _is_verdict(r)] + verdicts[:1]
            used |= {id(r) for r in covering}
            if whole_program or any(r["fix"] in allowed and applied.get(rel, {}).get(r["code"]) for r in covering):
                status_of_unit[unit] = "rewritten"
            elif covering:
                status_of_unit[unit] = "reported"
            else:
                status_of_unit[unit] = "missed"
        # A decline the tool places on another statement (the one that blocks the rewrite, e.g. an earlier
        # minimize, or a later statement that rebinds a name the loss reads) still tells the user something:
        # give each such finding to the nearest missed unit after it in the same function, else to the
        # nearest missed unit of the file, as "reported elsewhere".
        elsewhere: Set[int] = set()
        for row in rows:
            if id(row) in used or not _is_verdict(row):
                continue
            key = (row.get("cell") or 0, row["line"])
            best: Optional[Tuple[Tuple[int, int], int]] = None
            for site in counted:
                if status_of_unit[site.unit] != "missed" or site.unit in elsewhere:
                    continue
                scope = site.scope
                site_key = (site.cell or 0, site.line)
                if (scope[0], scope[1]) <= key <= (scope[2], scope[3]) and key <= site_key:
                    if best is None or site_key < best[0]:
                        best = (site_key, site.unit)
            if best is None:
                # placed after the site or in another function (e.g. on a later statement that rebinds a
                # name the loss reads): give it to the nearest missed unit of the same cell / file
                near = [(abs(site.line - row["line"]) if (site.cell or 0) == key[0] else 10**6 + site.line, site.unit)
                        for site in counted if status_of_unit[site.unit] == "missed" and site.unit not in elsewhere]
                best = min(near) if near else None
            if best is not None:
                elsewhere.add(best[1])
        for site in counted:
            status = status_of_unit[site.unit]
            if site.unit in elsewhere:
                status = "elsewhere"
            sites.append((rel, site, status))
        if not rows:
            files[rel] = "missed"
        elif rel in fix.rewritten:
            files[rel] = "rewritten"
        else:
            files[rel] = "reported"
    return {"files": files, "sites": sites}


# --------------------------------------------------------------------------------------------
# the measurement


def measure(corpus: Path, work: Path, jobs: int, unsafe: bool, timeout: float,
            tool: Sequence[str]) -> Dict[str, Any]:
    if not corpus.is_dir():
        raise CorpusError(f"--corpus {corpus}: no such directory; build it with --build MIRRORS (docs/corpus.md)")
    files, not_walked = inventory(corpus)
    if not files:
        raise CorpusError(f"--corpus {corpus}: no .py or .ipynb files; build it with --build MIRRORS")
    log = lambda msg: print(f"corpus: {msg}", file=sys.stderr, flush=True)  # noqa: E731
    data: Dict[str, Any] = {"corpus": str(corpus), "files": files, "not_walked": not_walked, "jobs": jobs,
                            "phases": {}}
    start = time.perf_counter()
    before = scan_tree_files(corpus, files)
    data["scan_s"] = time.perf_counter() - start
    log(f"{len(files)} files scanned for training sites in {data['scan_s']:.1f} s")
    common = ["--format", "json", "--jobs", str(jobs), "--isolated"]
    modes = [("safe", [])] + ([("unsafe", ["--unsafe-fixes"])] if unsafe else [])
    for mode, extra in modes:
        copy = work / mode
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(corpus, copy, symlinks=True)
        phases: Dict[str, Phase] = {}
        if mode == "safe":
            log("check ...")
            phases["check"] = run_phase("check", ["check", *common], copy, timeout, tool)
        log(f"fix {' '.join(extra)} ...")
        phases["fix"] = run_phase("fix", ["fix", *common, *extra], copy, timeout, tool)
        hashes = {rel: digest(copy / rel) for rel in files}
        changed = {rel for rel in files if hashes[rel] != digest(corpus / rel)}
        after = scan_tree_files(copy, files)
        log(f"fix {' '.join(extra + ['again'])} ...")
        phases["fix2"] = run_phase("fix again", ["fix", *common, *extra], copy, timeout, tool)
        again = {rel for rel in files if digest(copy / rel) != hashes[rel]}
        data["phases"][mode] = {k: v for k, v in phases.items()}
        data[mode] = {
            "changed": sorted(changed),
            "broken": broken_outputs(corpus, copy, files, changed),
            "dangling": dangling_names(corpus, copy, changed),
            "non_idempotent": sorted(again | phases["fix2"].rewritten),
            "after": after,
        }
    data["before"] = before
    return data


def summarise(data: Dict[str, Any]) -> Dict[str, Any]:
    """Every figure of the report, from the raw data of :func:`measure`."""
    before: Dict[str, ScanResult] = data["before"]
    check: Phase = data["phases"]["safe"]["check"]
    summary: Dict[str, Any] = {"modes": {}}
    parsed = [rel for rel, r in before.items() if r.parsed]
    summary["inventory"] = {
        "files": len(before), "python": sum(not r.notebook for r in before.values()),
        "notebooks": sum(r.notebook for r in before.values()), "parsed": len(parsed),
        "python2": sorted(rel for rel, r in before.items() if not r.parsed and r.python2 and not r.notebook),
        "notebooks_with_unparsable_cells": sorted(rel for rel, r in before.items() if r.notebook and r.cells_unparsed),
        "unparsable_other": sorted(rel for rel, r in before.items()
                                   if not r.parsed and not r.python2 and not r.notebook),
        "not_walked": data["not_walked"], "scan_s": data["scan_s"],
    }
    tfc900 = {row["path"] for row in check.findings if row["code"] == "TFC900"}
    summary["tfc900"] = {
        "files": sorted(tfc900),
        "python2_reported": sorted(set(summary["inventory"]["python2"]) & tfc900),
        "python2_with_tokens_not_reported": sorted(rel for rel in summary["inventory"]["python2"]
                                                   if before[rel].token_hint and rel not in tfc900),
        "parsable_but_reported": sorted(rel for rel in tfc900 if rel in before and before[rel].parsed),
    }
    site_files = {rel for rel, r in before.items() if r.counted_sites}
    summary["sites"] = {
        "files": len(site_files),
        "sites": sum(len(before[rel].counted_sites) for rel in site_files),
        "units": sum(len({s.unit for s in before[rel].counted_sites}) for rel in site_files),
        "by_kind": Counter(s.kind for rel in site_files for s in before[rel].counted_sites),
        "tf_gradients_not_training": sum(1 for r in before.values() for s in r.sites if s.why_not == "not-training"),
        "tf2_form": sum(1 for r in before.values() for s in r.sites
                        if s.why_not == "tf2-form" and s.kind != "tape.gradient"),
        "fed_gradients": sum(1 for r in before.values() for s in r.sites if s.why_not == "fed-gradients"),
        "python2_files_with_tokens": sum(1 for rel in summary["inventory"]["python2"] if before[rel].token_hint),
    }
    for mode, phases in data["phases"].items():
        fix: Phase = phases["fix"]
        allowed = ("safe",) if mode == "safe" else ("safe", "unsafe")
        cls = classify(before, check, fix, allowed)
        after: Dict[str, ScanResult] = data[mode]["after"]
        left = [(rel, s) for rel, r in after.items() for s in r.sites if s.contrib]
        left_avg = [(rel, s) for rel, r in after.items() for s in r.sites if s.removed_api and not s.contrib]
        crashes: Dict[str, Dict[str, Any]] = {}  # one entry per file (or whole run), with the phases it failed in
        for name, phase in phases.items():
            failures = list(phase.file_errors.items()) + [("(whole run)", e) for e in phase.run_errors]
            if phase.rc == 2 and not failures:
                failures.append(("(whole run)", "exit 2 without an error line"))
            for path, reason in failures:
                entry = crashes.setdefault(path, {"path": path, "phases": [], "reason": reason})
                entry["phases"].append(phase.name)
        summary["modes"][mode] = {
            "files": Counter(cls["files"].values()), "file_status": cls["files"],
            "sites": Counter(status for _, _, status in cls["sites"]),
            "units": _unit_counts(cls["sites"]),
            "site_rows": cls["sites"],
            "crashes": sorted(crashes.values(), key=lambda c: c["path"]), "broken": data[mode]["broken"],
            "dangling": data[mode]["dangling"], "non_idempotent": data[mode]["non_idempotent"],
            "changed": data[mode]["changed"],
            "contrib_left": left, "average_norm_left": left_avg,
            "contrib_before": sum(1 for r in before.values() for s in r.sites if s.contrib),
            "phases": {name: _phase_row(p, len(before)) for name, p in phases.items()},
            "new_findings_after_fix": _new_findings(check, phases["fix2"], set(data[mode]["changed"])),
            "safe_not_applied": _advertised_not_applied(check, fix, allowed),
        }
        applied = {(r["path"], r["code"]) for r in fix.findings if r.get("applied")}
        summary["modes"][mode]["eager"] = eager_figures(before, after, cls["files"], applied)
        summary["modes"][mode]["per_repo"] = per_repo(cls["files"], summary["modes"][mode]["eager"]["file_form"])
    summary["declines"] = _reasons([r for r in check.findings if r["fix"] == "none" and r["code"] != "TFC900"])
    summary["unsafe_reasons"] = _reasons([r for r in check.findings if r["fix"] == "unsafe"])
    summary["findings_by_code"] = Counter(r["code"] for r in check.findings)
    summary["findings_without_sites"] = _reasons([r for r in check.findings if r["code"] != "TFC900"
                                                  and r["path"] in before and not before[r["path"]].counted_sites])
    return summary


def eager_figures(before: Dict[str, ScanResult], after: Dict[str, ScanResult], file_status: Dict[str, str],
                  applied: Set[Tuple[str, str]]) -> Dict[str, Any]:
    """Issue 22: what form each file with training sites has after ``fix``.

    A file is *graph* while its code names a TF 1 session or a placeholder (``_corpus_scan.graph_markers``),
    else *eager*. Forms after ``fix``: ``converted`` (graph before, eager after: the whole-program
    migration), ``eager_before`` (never had a session or placeholder: a library module, an Estimator
    ``model_fn``, TF 1 eager code), ``tape`` (rewritten by ``fix`` and still graph: the per-site tape
    or shim form), ``graph`` (not rewritten, still graph). A notebook is judged on the cells that parse."""
    form: Dict[str, str] = {}
    for rel, status in file_status.items():
        b, a = before[rel], after.get(rel, before[rel])  # a file with sites parsed (a notebook: some cells)
        graph_before, graph_after = b.session or b.placeholder, a.session or a.placeholder
        if not graph_after:
            form[rel] = "converted" if graph_before else "eager_before"
        elif status == "rewritten":
            form[rel] = "tape"
        else:
            form[rel] = "graph"
    session_scripts = [rel for rel in form if before[rel].session]
    return {
        "files": len(form), "forms": Counter(form.values()), "file_form": form,
        "session_files": len(session_scripts),
        "session_files_converted": sum(form[rel] == "converted" for rel in session_scripts),
        "tfc301_applied": sorted({path for path, code in applied if code == "TFC301" and path in form}),
        "converted": sorted(rel for rel, f in form.items() if f == "converted"),
    }


def per_repo(file_status: Dict[str, str], form: Dict[str, str]) -> List[Dict[str, Any]]:
    """Issue 25: per repository, the files with training sites and what ``fix`` did to them."""
    rows: Dict[str, Dict[str, Any]] = {}
    for rel, status in file_status.items():
        repo = rel.split("/", 1)[0]
        row = rows.setdefault(repo, {"repo": repo, "files": 0, "rewritten": 0, "reported": 0, "missed": 0,
                                     "eager": 0, "tape": 0})
        row["files"] += 1
        row[status] += 1
        row["eager"] += form.get(rel) == "converted"
        row["tape"] += form.get(rel) == "tape"
    return sorted(rows.values(), key=lambda r: r["repo"].lower())


def _unit_counts(rows: Sequence[Tuple[str, Site, str]]) -> Counter:
    units = {(rel, site.unit): status for rel, site, status in rows}
    return Counter(units.values())


def _phase_row(phase: Phase, files: int) -> Dict[str, Any]:
    return {"name": phase.name, "argv": " ".join(phase.argv), "rc": phase.rc, "wall": phase.wall, "cpu": phase.cpu,
            "timed_out": phase.timed_out, "files_per_s": files / phase.wall if phase.wall else 0.0,
            "scanned": phase.scanned, "parsed": phase.parsed, "rewritten": len(phase.rewritten),
            "findings": len(phase.findings), "applied": sum(1 for r in phase.findings if r.get("applied"))}


def normalise_message(message: str) -> str:
    """A decline message with names, code and numbers taken out, so one reason groups together."""
    text = re.sub(r"`[^`]*`", "`…`", message)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    text = re.sub(r"\b\d+(\.\d+)?\b", "N", text)
    text = re.sub(r"\s+", " ", text).strip()
    # "the loss reads the parameter `a`: ...; the loss reads the parameter `b`: ..." is one reason
    return re.sub(r"\b([^;()]+?)(?:; \1)+", r"\1", text)


def _reasons(rows: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    groups: Dict[Tuple[str, str], List[Dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["code"], normalise_message(row["message"]))].append(row)
    out = []
    for (code, reason), members in groups.items():
        paths = sorted({m["path"] for m in members})
        examples = [f"{m['path']}:{'cell ' + str(m['cell']) + ':' if m.get('cell') else ''}{m['line']}: {m['message']}"
                    for m in members[:3]]
        out.append({"code": code, "reason": reason, "findings": len(members), "files": len(paths),
                    "examples": examples})
    out.sort(key=lambda g: (-g["files"], -g["findings"], g["code"], g["reason"]))
    return out


def _new_findings(check: Phase, fix2: Phase, changed: Set[str]) -> List[Dict[str, Any]]:
    """Findings on rewritten files after ``fix`` that were not there before (the tool flagging its own output)."""
    before = Counter((r["path"], r["code"], normalise_message(r["message"])) for r in check.findings)
    after = Counter((r["path"], r["code"], normalise_message(r["message"]))
                    for r in fix2.findings if r["path"] in changed and not r.get("applied"))
    new_rows = []
    extra = after - before
    for row in fix2.findings:
        key = (row["path"], row["code"], normalise_message(row["message"]))
        if extra.get(key, 0) > 0 and not row.get("applied"):
            extra[key] -= 1
            new_rows.append(row)
    return _reasons(new_rows)


def _advertised_not_applied(check: Phase, fix: Phase, allowed: Tuple[str, ...]) -> List[Dict[str, Any]]:
    """Fixes ``check`` said ``fix`` would apply (per file and code) that ``fix`` did not apply."""
    wanted = Counter((r["path"], r["code"]) for r in check.findings if r["fix"] in allowed)
    done = Counter((r["path"], r["code"]) for r in fix.findings if r.get("applied"))
    missing = wanted - done
    return [{"path": p, "code": c, "count": n} for (p, c), n in sorted(missing.items())]


# --------------------------------------------------------------------------------------------
# command line


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, help="the corpus directory (built with --build)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown report (JSON beside it)")
    parser.add_argument("--jobs", type=int, default=2, help="--jobs passed to tfclip-migrate (default 2)")
    parser.add_argument("--no-unsafe", dest="unsafe", action="store_false", help="skip the --unsafe-fixes runs")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed to one run (default 3600)")
    parser.add_argument("--work", type=Path, default=None, help="where the copies go (default: a temp dir)")
    parser.add_argument("--keep-work", action="store_true", help="keep the fixed copies (for reading diffs)")
    parser.add_argument("--examples", type=int, default=4, help="examples shown per group (default 4)")
    parser.add_argument("--tool", default=str(TOOL), help="the tfclip-migrate executable (default: this venv's)")
    parser.add_argument("--tool-label", default=None,
                        help="what --tool is, for the report header (default: this checkout's commit)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="the manifest (default: the committed one)")
    parser.add_argument("--build", type=Path, metavar="MIRRORS", help="(re)build --corpus from git mirrors, then exit")
    parser.add_argument("--record", type=Path, metavar="MIRRORS",
                        help="pin every manifest entry to its mirror's HEAD, then exit")
    args = parser.parse_args(argv)
    try:
        if args.record:
            record_manifest(args.record, args.manifest)
            print(f"corpus: {args.manifest} updated", file=sys.stderr)
            return 0
        if args.corpus is None:
            parser.error("--corpus DIR is required")
        if args.build:
            counts = build_corpus(args.build, args.corpus, load_manifest(args.manifest))
            print(f"corpus: {sum(counts.values())} files from {len(counts)} repositories in {args.corpus}",
                  file=sys.stderr)
            return 0
        # the tool runs inside the copies: a relative path must not depend on the current directory
        tool = str(Path(args.tool).resolve()) if Path(args.tool).exists() else shutil.which(args.tool)
        if tool is None:
            raise CorpusError(f"--tool {args.tool}: not found; install the project (pip install -e .) or pass --tool")
        if args.jobs < 1:
            raise CorpusError("--jobs must be at least 1")
        work = args.work or Path(tempfile.mkdtemp(prefix="tfclip-corpus-"))
        work.mkdir(parents=True, exist_ok=True)
        try:
            data = measure(args.corpus.resolve(), work, args.jobs, args.unsafe, args.timeout, [tool])
            data["tool_label"] = args.tool_label
            summary = summarise(data)
            manifest = load_manifest(args.manifest) if args.manifest.exists() else []
            text = _corpus_report.render(data, summary, manifest, args.examples)
        finally:
            if not args.keep_work and args.work is None:
                shutil.rmtree(work, ignore_errors=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        args.out.with_suffix(".json").write_text(
            json.dumps(_corpus_report.to_json(data, summary), indent=1, default=_json_default) + "\n",
            encoding="utf-8")
        sys.stdout.write(text)
        return 0
    except CorpusError as exc:
        print(f"corpus: error: {exc}", file=sys.stderr)
        return 2


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if isinstance(obj, (Site, ScanResult, Phase)):
        return asdict(obj)
    raise TypeError(type(obj).__name__)


if __name__ == "__main__":
    sys.exit(main())
