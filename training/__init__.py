"""thoughtvec training, one folder per step of the flow, each importing only the steps before it:
``corpus/`` (the corpus build and the word vectors the models read) → ``train/`` (the training loop and the
three encoder families) → ``export/`` (a checkpoint or a sentence-transformers folder to a bundle; what changes
a bundle afterwards) → ``evaluation/`` (SentEval and retrieval). ``tests/test_layers.py`` holds these arrows.

Importing this package is cheap (no torch): the ``thoughtvec`` command (``thoughtvec/cli.py``) imports
the parsers of ``training/commands`` and must start in a serving install. Their handlers
(``training/handlers/``), imported when their command runs, load the heavy modules.
"""
