"""The differential fuzzer of the codemods (issue 9): see ``docs/fuzzing.md``."""
