"""Training: ``thoughtvec train`` (``trainer.Trainer`` with ``config.TrainConfig``) runs one family of ``families/``
(skip-thought, mean-max AAE, invertible decoders) on the corpus. The parts: ``data`` (the corpus file as token
ids, batches, word counts), ``nn`` and ``softmax`` (layers), ``decoders`` (the decoders trained with an encoder),
``expansion`` (skip-thought's vocabulary expansion), ``plots``, ``provenance`` (the git commit), ``carry`` (a
checkpoint packed into parts and made whole again). Imports only ``corpus`` of training: export and evaluation
sit above it.
"""
