"""Markdown and JSON rendering of ``benchmarks/corpus.py``'s measurement (no measuring here)."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
# Tags that define a silent-miss shape (the others are shown in the per-tag table only).
SHAPE_TAGS = ("scope:", "in-loop", "in-def:", "in-optimizer-subclass", "in-lambda", "with:name_scope",
              "with:variable_scope", "with:control_dependencies", "with:device", "with:GradientTape",
              "receiver:", "notebook", "stmt:")


def _pct(n: int, total: int) -> str:
    return f"{n} ({100.0 * n / total:.0f}%)" if total else f"{n}"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _where(rel: str, site: Any) -> str:
    cell = f"cell {site.cell}:" if site.cell else ""
    return f"{rel}:{cell}{site.line}"


def shape_of(site: Any) -> str:
    tags = [t for t in site.tags if t.startswith(SHAPE_TAGS)]
    return site.kind + (" [" + ", ".join(tags) + "]" if tags else "")


def _machine() -> str:
    try:
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        load = "n/a"
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, load average {load} at the end of the run"


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = [f"Python {platform.python_version()}"]
    for name in ("libcst", "tfclip-compat"):
        try:
            parts.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            pass
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "codemods"],
                               capture_output=True, text=True).stdout.strip()
        parts.append(f"commit {commit}{' + uncommitted codemods/ changes' if dirty else ''}")
    except OSError:
        pass
    return ", ".join(parts)


def render(data: Dict[str, Any], summary: Dict[str, Any], manifest: Sequence[Dict[str, Any]], examples: int) -> str:
    out: List[str] = []
    w = out.append
    inv = summary["inventory"]
    modes = summary["modes"]
    site_files = summary["sites"]["files"]
    size = sum((Path(data["corpus"]) / rel).stat().st_size for rel in data["files"]) / 1e6
    w("# `tfclip-migrate` on a real-world TF1 corpus\n")
    w(f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    w(f"- Machine: {_machine()}")
    w(f"- Versions: {_versions()}")
    if data.get("tool_label"):
        w(f"- Tool measured: `{data['tool_label']}`")
    repos = len({rel.split("/", 1)[0] for rel in data["files"]})
    w(f"- Corpus: `{data['corpus']}`: {repos} top-level directories (repositories), {inv['files']:,} files "
      f"({inv['python']:,} `.py`, {inv['notebooks']:,} `.ipynb`, {size:.1f} MB); `--jobs {data['jobs']}`")
    w("- Command: `python benchmarks/corpus.py --corpus DIR` (docs/corpus.md); every run of the tool is "
      "`tfclip-migrate <check|fix> --format json --jobs N --isolated .` on a copy of the corpus\n")

    w("## Summary\n")
    names = list(modes)
    w("| figure | " + " | ".join(f"`fix`{' --unsafe-fixes' if m == 'unsafe' else ''}" for m in names)
      + " | goal (issue 10) |")
    w("|---|" + "---|" * len(names) + "---|")

    def row(label: str, values: Sequence[str], goal: str) -> None:
        w(f"| {label} | " + " | ".join(values) + f" | {goal} |")

    row("crashes (internal errors, tracebacks, timeouts)", [str(len(modes[m]["crashes"])) for m in names], "0")
    row("outputs that no longer parse", [str(len(modes[m]["broken"])) for m in names], "0")
    row("**outputs that read a name the rewrite removed** (`NameError` when run)",
        [str(len(modes[m]["dangling"])) for m in names], "0")
    row("non-idempotent files (second `fix` changes them)", [str(len(modes[m]["non_idempotent"])) for m in names], "0")
    for status in ("rewritten", "reported", "missed"):
        label = {"rewritten": "files with training sites: rewritten (a fix applied)",
                 "reported": "... reported only (findings, no fix applied)",
                 "missed": "... **silently missed** (no finding at all)"}[status]
        row(label, [_pct(modes[m]["files"][status], site_files) for m in names],
            {"rewritten": "most", "reported": "the rest", "missed": "0"}[status])
    units = {m: sum(modes[m]["units"].values()) for m in names}
    for status in ("rewritten", "reported", "elsewhere", "missed"):
        label = {"rewritten": "training units (linked sites): rewritten", "reported": "... reported on the site",
                 "elsewhere": "... reported only on another statement (the blocking one)",
                 "missed": "... **silently missed**"}[status]
        row(label, [_pct(modes[m]["units"][status], units[m]) for m in names], {"missed": "0"}.get(status, ""))
    row("files with ≥1 silently missed unit",
        [str(len({rel for rel, _, st in modes[m]["site_rows"] if st == "missed"})) for m in names], "0")
    row("files with training sites: **eager after `fix`** (had a session or placeholder, none left)",
        [_pct(modes[m]["eager"]["forms"]["converted"], site_files) for m in names], "every convertible file")
    row("... rewritten, still a TF 1 graph (the per-site tape / shim form)",
        [_pct(modes[m]["eager"]["forms"]["tape"], site_files) for m in names], "")
    row("... never had a session or placeholder (library code, `model_fn`s, TF 1 eager)",
        [_pct(modes[m]["eager"]["forms"]["eager_before"], site_files) for m in names], "")
    row("session scripts (a session before `fix`) made eager",
        [_pct(modes[m]["eager"]["session_files_converted"], modes[m]["eager"]["session_files"]) for m in names], "")
    row("`tf.contrib` clipping calls / references left after `fix`",
        [f"{len(modes[m]['contrib_left'])} in {len({r for r, _ in modes[m]['contrib_left']})} files "
         f"(of {modes[m]['contrib_before']})" for m in names], "0")
    row("`tf.clip_by_average_norm` left after `fix`", [str(len(modes[m]["average_norm_left"])) for m in names], "0")
    row("new findings on files `fix` rewrote (flags its own output)",
        [str(sum(g["findings"] for g in modes[m]["new_findings_after_fix"])) for m in names], "0")
    row("fixes `check` advertised that `fix` did not apply",
        [str(sum(r["count"] for r in modes[m]["safe_not_applied"])) for m in names], "0")
    w("")
    w(f"A *training site* is found by an independent `ast` scanner (`benchmarks/_corpus_scan.py`): "
      f"`minimize` / `compute_gradients` / `apply_gradients` calls in TensorFlow files, `tf.gradients` whose result "
      f"reaches `apply_gradients`, and every removed clipping API (contrib, `tf.clip_by_average_norm`) in any spelling. "
      f"Sites linked by data flow (`compute_gradients -> clip -> apply_gradients`) form one *unit*; a unit is rewritten "
      f"when a finding on one of its statements was fixed, reported when a finding covers it, *reported elsewhere* "
      f"when the only finding for it sits on another statement (a decline placed on the statement that blocks the "
      f"rewrite: an earlier site, or a later rebinding of a name the loss reads), **missed** otherwise. "
      f"File status: rewritten when `fix` rewrote the file, missed when `check` said nothing at all about it. "
      f"{site_files} files hold {summary['sites']['sites']} sites in {summary['sites']['units']} units "
      f"({', '.join(f'{k} {v}' for k, v in summary['sites']['by_kind'].most_common())}). "
      f"Not counted: {summary['sites']['tf_gradients_not_training']} `tf.gradients` calls that never reach "
      f"`apply_gradients` (penalties, saliency), and {summary['sites']['tf2_form']} sites already in TF 2 form "
      f"(`apply_gradients` fed by a `tf.GradientTape`, `minimize` on a Keras optimizer), and "
      f"{summary['sites']['fed_gradients']} `apply_gradients` of gradients fed through placeholders with no "
      f"gradient computation linked to them (nothing for a tape to record).\n")

    # phases
    w("## Time per phase\n")
    w("| mode | phase | command | exit | wall s | CPU s | files/s | scanned | parsed by the tool | rewritten | findings (applied) |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for m in names:
        for name, p in modes[m]["phases"].items():
            w(f"| {m} | {p['name']} | `{_cell(p['argv'])}` | {p['rc']}{' (timeout)' if p['timed_out'] else ''} | {p['wall']:.1f} | "
              f"{p['cpu']:.1f} | {p['files_per_s']:.1f} | {p['scanned']} | {p['parsed']} | {p['rewritten']} | "
              f"{p['findings']} ({p['applied']}) |")
    w(f"\nThe independent scanner read every file in {inv['scan_s']:.1f} s.\n")

    # corpus table
    w("## The corpus\n")
    per_repo: Dict[str, Counter] = defaultdict(Counter)
    before = data["before"]
    first_mode = names[0]
    for rel, result in before.items():
        top = rel.split("/", 1)[0]
        c = per_repo[top]
        c["files"] += 1
        c["notebooks"] += result.notebook
        c["py2"] += (not result.parsed and result.python2 and not result.notebook)
        if result.counted_sites:
            c["site_files"] += 1
            c["sites"] += len(result.counted_sites)
    for rel, status in modes[first_mode]["file_status"].items():
        per_repo[rel.split("/", 1)[0]][status] += 1
    for rel, form in modes[first_mode]["eager"]["file_form"].items():
        per_repo[rel.split("/", 1)[0]]["form:" + form] += 1
    w("| repository | kind | commit | files (.ipynb) | Python 2 | files with sites | sites | rewritten | reported | missed "
      "| eager after `fix` | tape / shim form |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|")
    by_dir = {e["repo"].replace("/", "__"): e for e in manifest}
    for top in sorted(per_repo, key=str.lower):
        c = per_repo[top]
        e = by_dir.get(top, {})
        w(f"| {e.get('repo', top)} | {_cell(e.get('kind', ''))} | {e.get('commit', '')[:10]} | {c['files']} "
          f"({c['notebooks']}) | {c['py2']} | {c['site_files']} | {c['sites']} | {c['rewritten']} | {c['reported']} | "
          f"{c['missed']} | {c['form:converted']} | {c['form:tape']} |")
    w(f"\nFile status columns are for `fix` (safe fixes); *eager after `fix`*: the file named a TF 1 session or "
      f"placeholder before `fix` and names neither after it; *tape / shim form*: rewritten and still a graph. Not walked by the CLI (documented excluded directories): "
      f"{len(inv['not_walked'])} files.\n")

    # crashes, broken, idempotency
    for m in names:
        label = "" if m == "safe" else " (`--unsafe-fixes`)"
        w(f"## Crashes{label}\n")
        _list(w, [f"`{c['path']}` ({', '.join(c['phases'])}): {c['reason']}" for c in modes[m]["crashes"]], "none")
        w(f"## Outputs that no longer parse{label}\n")
        _list(w, [f"`{p}`: {why}" for p, why in sorted(modes[m]["broken"].items())], "none")
        w(f"## Outputs that read a name the rewrite removed{label}\n")
        w("A name bound somewhere in the file before `fix`, read after it, and bound nowhere after it: "
          "the rewritten program raises `NameError` when it reaches that read.\n")
        _list(w, [f"`{p}`: {', '.join(f'`{n}`' for n in names_)}" for p, names_ in sorted(modes[m]["dangling"].items())],
              "none")
        w(f"## Non-idempotent files{label}\n")
        _list(w, [f"`{p}`" for p in modes[m]["non_idempotent"]], "none")

    # Python 2
    t9 = summary["tfc900"]
    w("## Python 2 and other unparsable files\n")
    w(f"- Python 2 files (CPython cannot parse them, lib2to3 can): {len(inv['python2'])}; the tool reported "
      f"`TFC900` for {len(t9['python2_reported'])} (the correct answer), {summary['sites']['python2_files_with_tokens']} "
      f"mention a training-site token; Python 2 files with such a token and no `TFC900`: "
      f"{len(t9['python2_with_tokens_not_reported'])} {_short(t9['python2_with_tokens_not_reported'])}")
    w(f"- Other unparsable `.py` files: {len(inv['unparsable_other'])} {_short(inv['unparsable_other'])}")
    w(f"- Notebooks with code cells that do not parse (exercise templates, shell continuation lines...): "
      f"{len(inv['notebooks_with_unparsable_cells'])}")
    w(f"- `TFC900` on files CPython parses: {len(t9['parsable_but_reported'])} {_short(t9['parsable_but_reported'])}\n")

    # sites by kind x status
    for m in names:
        label = "" if m == "safe" else " (`--unsafe-fixes`)"
        w(f"## Training sites by kind{label}\n")
        kinds: Dict[str, Counter] = defaultdict(Counter)
        for rel, site, status in modes[m]["site_rows"]:
            kinds[site.kind][status] += 1
        w("| kind | sites | rewritten | reported | reported elsewhere | missed |")
        w("|---|---|---|---|---|---|")
        for kind, c in sorted(kinds.items(), key=lambda kv: -sum(kv[1].values())):
            total = sum(c.values())
            w(f"| `{kind}` | {total} | {_pct(c['rewritten'], total)} | {_pct(c['reported'], total)} | "
              f"{_pct(c['elsewhere'], total)} | {_pct(c['missed'], total)} |")
        w("")

    # silent-miss shapes
    rows = modes[first_mode]["site_rows"]
    missed = [(rel, s) for rel, s, st in rows if st == "missed"]
    w("## Silently missed sites, by shape (ranked by files)\n")
    w("A shape is the site's kind and its context (scope, loops, `with` blocks, receiver, notebook). "
      "Units reported only on another statement are listed after this table.\n")
    shapes: Dict[str, List[Tuple[str, Any]]] = defaultdict(list)
    for rel, site in missed:
        shapes[shape_of(site)].append((rel, site))
    w("| # | shape (kind [context]) | files | sites | examples |")
    w("|---|---|---|---|---|")
    ranked = sorted(shapes.items(), key=lambda kv: (-len({r for r, _ in kv[1]}), -len(kv[1]), kv[0]))
    for i, (shape, members) in enumerate(ranked, 1):
        ex = "<br>".join(f"`{_where(r, s)}` `{_cell(s.snippet[:90])}`" for r, s in members[:examples])
        w(f"| {i} | `{_cell(shape)}` | {len({r for r, _ in members})} | {len(members)} | {ex} |")
    elsewhere = [(rel, s) for rel, s, st in rows if st == "elsewhere"]
    w(f"\nSites whose only finding sits on another statement ({len(elsewhere)} sites in "
      f"{len({r for r, _ in elsewhere})} files): " + ", ".join(f"`{_where(r, s)}`" for r, s in elsewhere[:40])
      + (", ..." if len(elsewhere) > 40 else ""))
    w("\nBy single context tag (all counted sites vs silently missed ones):\n")
    tag_all: Counter = Counter()
    tag_missed: Counter = Counter()
    for rel, site, st in rows:
        for tag in set(site.tags) | {"kind:" + site.kind}:
            tag_all[tag] += 1
            tag_missed[tag] += st == "missed"
    w("| tag | sites | missed |")
    w("|---|---|---|")
    for tag, n in sorted(tag_all.items(), key=lambda kv: (-tag_missed[kv[0]], -kv[1])):
        w(f"| `{tag}` | {n} | {_pct(tag_missed[tag], n)} |")
    w("")

    for m in names:
        label = "" if m == "safe" else " (`--unsafe-fixes`)"
        e = modes[m]["eager"]
        w(f"## Eager programs after `fix`{label} (issue 22)\n")
        w(f"A file is a TF 1 graph while its code names a session (`tf.Session`, `InteractiveSession`, "
          f"`MonitoredTrainingSession`, `get_session()`, ...) or a placeholder; `fix` made it eager when it did before "
          f"and does not after. TFC301 applied in {len(e['tfc301_applied'])} files with training sites.\n")
        w("| form after `fix` | files with training sites |")
        w("|---|---|")
        for form, label_ in (("converted", "eager (converted by `fix`)"), ("tape", "rewritten, still graph (tape / shim)"),
                             ("graph", "not rewritten, still graph"),
                             ("eager_before", "never had a session or placeholder")):
            w(f"| {label_} | {_pct(e['forms'][form], e['files'])} |")
        w("")
        _list(w, [f"`{p}`" for p in e["converted"]], "no file was made eager")
    _reason_table(w, "Decline reasons (findings without a fix), ranked by files", summary["declines"])
    _reason_table(w, "Why fixes are unsafe (findings with an unsafe fix), ranked by files", summary["unsafe_reasons"])
    for m in names:
        label = "" if m == "safe" else " (`--unsafe-fixes`)"
        w(f"## `tf.contrib` clipping left after `fix`{label}\n")
        _list(w, [f"`{_where(r, s)}` `{_cell(s.snippet[:100])}` ({'reference' if s.reference else 'call'} of `{s.api}`)"
                  for r, s in modes[m]["contrib_left"]], "none")
        _reason_table(w, f"Findings after `fix` on files it rewrote that were not there before{label}",
                      modes[m]["new_findings_after_fix"], level="###")
        w(f"### Fixes `check` advertised that `fix` did not apply{label}\n")
        _list(w, [f"`{r['path']}`: {r['code']} x{r['count']}" for r in modes[m]["safe_not_applied"]], "none")
    _reason_table(w, "Findings in files without training sites (look-alikes, helpers, false positives?)",
                  summary["findings_without_sites"])
    w("## Findings by code (`check`)\n")
    w(", ".join(f"{code} x{n}" for code, n in sorted(summary["findings_by_code"].items())) or "none")
    w("")
    return "\n".join(out) + "\n"


def _short(paths: Sequence[str], n: int = 6) -> str:
    if not paths:
        return ""
    shown = ", ".join(f"`{p}`" for p in paths[:n])
    return f"({shown}{', ...' if len(paths) > n else ''})"


def _list(w, items: Sequence[str], empty: str) -> None:
    if not items:
        w(f"{empty}\n")
        return
    for item in items[:200]:
        w(f"- {item}")
    if len(items) > 200:
        w(f"- ... and {len(items) - 200} more (see the JSON)")
    w("")


def _reason_table(w, title: str, groups: Sequence[Dict[str, Any]], level: str = "##") -> None:
    w(f"{level} {title}\n")
    if not groups:
        w("none\n")
        return
    w("| # | code | reason (names and numbers normalised) | files | findings | example |")
    w("|---|---|---|---|---|---|")
    for i, g in enumerate(groups, 1):
        w(f"| {i} | {g['code']} | {_cell(g['reason'])} | {g['files']} | {g['findings']} | {_cell(g['examples'][0])} |")
    w("")


def to_json(data: Dict[str, Any], summary: Dict[str, Any]) -> Dict[str, Any]:
    """The raw figures: everything of the markdown report, per file and per site."""
    modes = {}
    for m, s in summary["modes"].items():
        modes[m] = {k: v for k, v in s.items() if k not in ("site_rows", "contrib_left", "average_norm_left")}
        modes[m]["sites"] = [{"path": rel, **asdict(site), "status": st} for rel, site, st in s["site_rows"]]
        modes[m]["contrib_left"] = [{"path": rel, **asdict(site)} for rel, site in s["contrib_left"]]
        modes[m]["average_norm_left"] = [{"path": rel, **asdict(site)} for rel, site in s["average_norm_left"]]
    return {
        "corpus": data["corpus"], "jobs": data["jobs"], "inventory": summary["inventory"],
        "tfc900": summary["tfc900"], "sites": summary["sites"], "modes": modes,
        "declines": summary["declines"], "unsafe_reasons": summary["unsafe_reasons"],
        "findings_without_sites": summary["findings_without_sites"],
        "findings_by_code": summary["findings_by_code"],
        "check_findings": data["phases"]["safe"]["check"].findings,
        "python": sys.version,
    }
