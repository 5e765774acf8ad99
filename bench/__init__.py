"""thoughtvec benchmarks and measurement tools: ``thoughtvec bench``, the per-request floor, FLOP counts,
index benchmarks and the long-input pooling check. They measure the server; the server never imports them.
"""
