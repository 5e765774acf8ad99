"""Evaluation on the SentEval downstream tasks.

``datasets`` reads the task data (``../shared/data/senteval``); it imports nothing heavy, so the corpus
command's handler can use it to keep evaluation sentences out of the training corpus (the corpus build takes
them as an argument: nothing below evaluation imports it).
"""
