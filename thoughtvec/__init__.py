"""thoughtvec: sentence embeddings from classic unsupervised encoders, trained, served and measured.

One import name for the whole project. The repository's top-level folders install under it
(``pyproject.toml``'s package-dir): ``service/`` is :mod:`thoughtvec.service` (the serving install: bundle
format, encoders, batching, indexes, HTTP; no torch), ``training/`` is :mod:`thoughtvec.training` (corpus,
the three families, export, evaluation) and ``bench/`` is :mod:`thoughtvec.bench` (measurement tools). This
folder holds only the ``thoughtvec`` command, which composes their subcommands.
"""
