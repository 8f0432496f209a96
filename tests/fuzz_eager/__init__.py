"""The differential fuzzer and executed-equivalence harness for whole-program migration (TFC301):
TF 1 session scripts run before (graph mode) and after (eager TF 2), compared step by step."""
