"""thoughtvec serving: bundles, tokenizer, ONNX Runtime encoders, dynamic batching, FAISS indexes, HTTP API.

Nothing here imports torch or ``training``: the serving install has neither.
"""
