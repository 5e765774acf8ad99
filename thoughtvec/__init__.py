"""thoughtvec: sentence embeddings from classic unsupervised encoders, trained, served and measured.

One import name for the whole project. The repository's top-level folders install under it
(``pyproject.toml``'s package-dir): ``service/`` is :mod:`thoughtvec.service` (the serving install: bundle
format, encoders, batching, indexes, HTTP; no torch), ``training/`` is :mod:`thoughtvec.training` (corpus,
the three families, export, evaluation) and ``bench/`` is :mod:`thoughtvec.bench` (measurement tools). This
folder holds only the ``thoughtvec`` command, which composes their subcommands.
"""

# The checkout's thoughtvec/ folder holds only the command; with it first on the path (a command run from the
# checkout's root), a strict editable install's tree of links (`make install-dev`) still supplies the rest.
__path__ = __import__("pkgutil").extend_path(__path__, __name__)
