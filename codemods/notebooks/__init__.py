"""Jupyter notebooks: reading cells (:mod:`~codemods.notebooks.cells`), writing changed cells back
byte-exactly (:mod:`~codemods.notebooks.layout`), and notebooks with cells that do not parse
(:mod:`~codemods.notebooks.partial`)."""
