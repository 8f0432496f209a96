"""Group safe-fix failures of a fuzz run by probable root cause (a first cut for the triage).

``python -m tests.fuzz.triage benchmarks/out/fuzz.json`` (or the ``fuzz.partial.jsonl`` of a run in progress) prints, per root cause, the count and
the first indices. The rules look at the program's grammar tags, the applied rule codes and the
failure detail; the first rule that matches wins, so the order goes from the most specific cause
to the most generic. A heuristic: ``KNOWN_FAILURES.md`` holds the hand-checked result, with a
minimal reproducer per cause, each re-run through the oracle.
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
    ("reference variables (use_resource=False): a tape cannot differentiate them",
     lambda t, c, d: "use_resource_false" in t and ("RefVariable" in d or "None values" in d or "No gradients" in d
                                                    or "differ" in d)),
    ("(grad, var) list removed by the rewrite but read afterwards (summaries)",
     lambda t, c, d: d.startswith("NameError")),
    ("gradient_override_map ignored by the tape",
     lambda t, c, d: bool(t & {"straight_through", "gradient_reversal"}) and "differ" in d),
    ("non-trainable variable in a TRAINABLE_* collection / positional trainable=False",
     lambda t, c, d: bool(t & {"collection_trainable_variables", "collection_trainable_resource_variables",
                               "non_trainable_positional"})),
    ("dynamic_rnn: cell weights created inside the loop get no tape gradient",
     lambda t, c, d: "dynamic_rnn" in t),
    ("tower losses in a list mutated by append/extend/+=/item",
     lambda t, c, d: "towers" in t),
    ("object attribute (self.loss) changed by a method after the tape",
     lambda t, c, d: "model_class" in t),
    ("helper function reads a module-level tensor computed before the tape",
     lambda t, c, d: "module_tensor_helper" in t),
    ("losses / regularization collections read through tf.get_collection / get_total_loss",
     lambda t, c, d: bool(t & {"losses_collection", "tf_losses_total", "regularization_collection"})),
    ("Keras layer / activation / backend call, tf.layers call or convert_to_tensor left outside the tape",
     lambda t, c, d: bool(t & {"keras_dense", "keras_activation", "keras_backend_dot", "convert_to_tensor",
                               "layers_dense", "layers_conv2d", "layers_batch_norm", "keras_batch_norm"})),
    ("control flow v1 (disable_control_flow_v2) under a tape",
     lambda t, c, d: "disable_control_flow_v2" in t),
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


def main(argv: List[str]) -> int:
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
