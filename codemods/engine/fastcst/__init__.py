"""libcst speed-ups with libcst's results: read-only traversals without rebuilding
(:mod:`~codemods.engine.fastcst.visit`), lazy metadata (:mod:`~codemods.engine.fastcst.metadata`)
and positions (:mod:`~codemods.engine.fastcst.positions`). ``tests/codemods/test_metadata.py`` compares
each with libcst's own on every fixture."""
