"""The compat form shared by TFC001-TFC004: a removed TF 1 helper -> ``tfclip_compat.<name>``.

* :mod:`~codemods.rules.compat.shim_rewrite` -- the rewrite and its gates;
* :mod:`~codemods.rules.compat.contrib_signatures` -- TF 1.15 signatures of the removed helpers;
* :mod:`~codemods.rules.compat.aliases` -- module aliases bound by assignment (``slim = tf.contrib.slim``).
"""
