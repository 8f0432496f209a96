"""Group safe-fix failures of a fuzz run by probable root cause (a first cut for the triage).

``python -m tests.fuzz.triage benchmarks/out/fuzz.json`` (or the ``fuzz.partial.jsonl`` of a run in progress) prints, per root cause, the count and
the first indices. The rules look at the program's grammar tags, the applied rule codes and the
failure detail; the first rule that matches wins, so the order goes from the most specific cause
to the most generic. A program often has several causes (a Keras layer *and* a tower list...):
it is counted once, under the first. A heuristic: ``REGRESSIONS.md`` holds the hand-checked result, with a
minimal reproducer per cause; ``python -m tests.fuzz.triage --check-known`` re-runs each of
them through the oracle and prints its verdict.
"""

from __future__ import annotations

import collections
import json
import sys
from typing import Callable, Dict, List, Tuple

from tests.fuzz.runner import failures

Rule = Tuple[str, Callable[[set, set, str], bool]]

RULES: List[Rule] = [
    ("TFC104: Keras optimizer rejects a tf.Variable learning rate",
     lambda t, c, d: "TFC104" in c and "learning_rate" in d and "should be float" in d),
    ("TFC104: Keras optimizer reused on a growing variable set",
     lambda t, c, d: "TFC104" in c and "Unknown variable" in d),
    ("TFC001 in eager code: shim wrapper's variables() returns the inner optimizer's (contrib: [])",
     lambda t, c, d: "eager" in t and "only before [], only after ['optimizer.variables()" in d),
    ("(grad, var) list removed by the rewrite but read afterwards (summaries)",
     lambda t, c, d: d.startswith("NameError")),
    ("reference variables (use_resource=False): a tape cannot differentiate them",
     lambda t, c, d: "RefVariable" in d or ("use_resource_false" in t and ("None values" in d or "differ" in d))),
    ("tower losses in a list mutated by append/extend/+=/item",
     lambda t, c, d: "towers" in t),
    ("object attribute (self.loss) changed by a method after the tape",
     lambda t, c, d: "model_class" in t),
    ("helper function reads a module-level tensor computed before the tape",
     lambda t, c, d: "module_tensor_helper" in t),
    ("losses / regularization collections read through tf.get_collection / get_total_loss",
     lambda t, c, d: bool(t & {"losses_collection", "tf_losses_total"})),
    ("Keras layer / activation / backend call, tf.layers call or convert_to_tensor left outside the tape",
     lambda t, c, d: bool(t & {"keras_dense", "keras_activation", "keras_backend_dot", "convert_to_tensor",
                               "layers_dense", "layers_conv2d", "layers_batch_norm", "keras_batch_norm"})),
    ("non-trainable variable in a TRAINABLE_* collection",
     lambda t, c, d: bool(t & {"collection_trainable_variables", "collection_trainable_resource_variables"})),
    ("dynamic_rnn: cell weights created inside the loop get no tape gradient",
     lambda t, c, d: "dynamic_rnn" in t),
    ("gradient_override_map ignored by the tape",
     lambda t, c, d: bool(t & {"straight_through", "gradient_reversal"})),
    ("control flow v1 (tf.disable_control_flow_v2) cond/while under a tape",
     lambda t, c, d: "disable_control_flow_v2" in t and bool(t & {"cond_model", "while_loop", "map_fn"})),
    ("cached variable reads (static_rnn, caching_device) under a tape",
     lambda t, c, d: bool(t & {"kinds_static_rnn", "kinds_caching_device"})),
    ("a slice / item of a variable typed as the variable, left outside the tape",
     lambda t, c, d: bool(t & {"kinds_slice", "kinds_item", "eager_kinds_slice_inside"})),
    ("a TF constructor of tensors (distribution, tf.Print, LSTMStateTuple) typed as a variable object",
     lambda t, c, d: bool(t & {"kinds_distribution", "kinds_print", "kinds_state_tuple",
                               "kinds_unknown_constructor", "eager_kinds_distribution", "eager_kinds_state_tuple"})),
    ("regularization collection read by the loss",
     lambda t, c, d: "regularization_collection" in t),
    ("other", lambda t, c, d: True),
]


def classify(result: dict) -> str:
    if result.get("verdict") != "ok":
        return "harness: " + str(result.get("verdict"))
    entry = result["safe"]
    tags = set(result.get("blocks", []))
    codes = {d["code"] for d in entry.get("diagnostics", []) if d["applied"]}
    detail = entry.get("detail") or ""
    return next(name for name, rule in RULES if rule(tags, codes, detail))


def triage(results: List[dict]) -> Dict[str, List[dict]]:
    groups: Dict[str, List[dict]] = collections.defaultdict(list)
    for r in failures(results):
        groups[classify(r)].append(r)
    return dict(sorted(groups.items(), key=lambda kv: -len(kv[1])))


def check_known(path: str) -> int:
    """Run every reproducer of ``REGRESSIONS.md`` (each python block under a ``###`` heading)
    through the oracle in this process and print its safe-fix verdict."""
    import re

    from tests.fuzz import cli

    cli._in_process()  # sys.path, TF and the stand-ins first: oracle imports _equivalence
    from tests.fuzz import oracle
    from tests.fuzz.generator import Program

    text = open(path).read()
    for title, code in re.findall(r"^### (.+?)$.*?```python\n(.*?)```", text, re.S | re.M):
        kind = "eager" if "enable_eager_execution" in code else "graph"
        r = oracle.check_program(Program(0, 0, kind, code, frozenset()))
        verdict = r["verdict"] if r["verdict"] != "ok" else r["safe"]["verdict"]
        detail = r.get("detail") if r["verdict"] != "ok" else r["safe"]["detail"]
        print(f"{verdict:12s} {title}  ({len(code.splitlines())} lines) {' '.join(str(detail).split())[:140]}")
    return 0


def main(argv: List[str]) -> int:
    if argv and argv[0] == "--check-known":
        return check_known(argv[1] if len(argv) > 1 else "tests/fuzz/REGRESSIONS.md")
    with open(argv[0]) as fh:
        if argv[0].endswith(".jsonl"):  # the long mode's partial stream
            results = [json.loads(line) for line in fh if line.strip()]
        else:
            data = json.load(fh)
            results = data["results"] if isinstance(data, dict) else data
    for name, rs in triage(results).items():
        verdicts = collections.Counter(r["safe"]["verdict"] if r.get("verdict") == "ok" else r["verdict"] for r in rs)
        print(f"{len(rs):4d}  {name}  {dict(verdicts)}  e.g. {[r['index'] for r in rs[:8]]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
