"""Evaluation on the SentEval downstream tasks.

``datasets`` reads the task data (``../shared/data/senteval``); it imports nothing heavy, so the
corpus builder can use it to keep evaluation sentences out of the training corpus.
"""
