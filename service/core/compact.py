"""Compact vectors: the int8, uint8, binary and ubinary codes of float vectors, as sentence-transformers'
``quantize_embeddings`` makes them, but on ranges fixed ahead, so that a vector's codes never depend on what it was
requested or batched with (sentence-transformers takes the ranges from the batch itself when given none).

* ``int8`` / ``uint8`` (a byte a dimension): each dimension's range ``[start, end]`` (:meth:`Ranges.of` a
  calibration set) is cut into 256 equal steps, and a value's code is the step it falls in,
  ``floor((x - start) / step)``, clipped to 0..255 (a value past the calibration's range takes the nearest end;
  sentence-transformers cuts 255 steps and lets such a value wrap around): that is ``uint8``; ``int8`` is the same code less 128 (-128..127), so both carry the same 256 levels. Reading a
  code back (:func:`dequantize`) gives its step's middle: at most half a step from the value within the range.
* ``binary`` / ``ubinary`` (a bit a dimension): 1 where the value is above 0, packed 8 to a byte, the first
  dimension in the first byte's highest bit (``np.packbits``); a vector whose dimensions are not a multiple of 8
  is padded with zero bits up to the next byte. ``ubinary`` gives the bytes (0..255), ``binary`` each byte less 128
  (-128..127). Hamming similarity (:func:`hamming_similarity`) compares them, as vector databases do.

Pure numpy: the service (``core/calibration.py``) and the retrieval harness call the same functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

Precision = Literal["float", "int8", "uint8", "binary", "ubinary"]
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
SCALAR: frozenset[Precision] = frozenset({"int8", "uint8"})  # the precisions that need a calibration's ranges
BITS: frozenset[Precision] = frozenset({"binary", "ubinary"})
LEVELS = 256  # codes of one byte
OFFSET = 128  # int8 = uint8 - OFFSET; binary = ubinary - OFFSET


@dataclass(frozen=True)
class Ranges:
    """Per-dimension ``start`` and ``step`` of the 256 levels of an int8 or uint8 code, each ``(dim,)`` float64."""

    start: np.ndarray
    step: np.ndarray

    @classmethod
    def of(cls, calibration: np.ndarray) -> Ranges:
        """The ranges of ``calibration`` ``(n, dim)``: each dimension's minimum to its maximum, as sentence-transformers
        takes them. A dimension that never varies gets a step of 1 (every value at its start codes as 0)."""
        x = np.asarray(calibration, np.float64)  # (n, dim)
        if x.ndim != 2 or len(x) == 0:
            raise ValueError(f"a calibration set is a non-empty (n, dim) array; got shape {x.shape}")
        lo, hi = x.min(axis=0), x.max(axis=0)  # (dim,)
        step = (hi - lo) / LEVELS  # 256 bins; the maximum itself, at the last one's end, is clipped into it
        return cls(start=lo, step=np.where(step > 0, step, 1.0))

    @property
    def dim(self) -> int:
        return len(self.start)


def quantize(vectors: np.ndarray, precision: Precision, ranges: Ranges | None = None) -> np.ndarray:
    """``vectors`` ``(n, dim)`` as ``precision`` codes: ``(n, dim)`` int8/uint8, ``(n, ceil(dim / 8))`` for the bit
    precisions, the float32 vectors themselves for ``float``. ``ranges`` is needed for int8 and uint8 only."""
    x = np.asarray(vectors, np.float32)  # (n, dim)
    if precision == "float":
        return x
    if precision in BITS:
        packed = np.packbits(x > 0, axis=-1)  # (n, ceil(dim / 8)) uint8; each row padded with zero bits
        return packed if precision == "ubinary" else (packed.astype(np.int16) - OFFSET).astype(np.int8)
    if precision not in SCALAR:
        raise ValueError(f"precision {precision!r} is not one of {PRECISIONS}")
    if ranges is None or ranges.dim != x.shape[-1]:
        raise ValueError(f"{precision} needs the ranges of {x.shape[-1]} dimensions; got {None if ranges is None else ranges.dim}")
    levels = np.clip(np.floor((x - ranges.start) / ranges.step), 0, LEVELS - 1)  # (n, dim), float64
    codes = levels.astype(np.uint8)
    return codes if precision == "uint8" else (levels - OFFSET).astype(np.int8)


def dequantize(codes: np.ndarray, precision: Precision, ranges: Ranges | None = None, dim: int | None = None) -> np.ndarray:
    """The float vectors ``codes`` stand for: for int8/uint8 each level's middle; for the bit precisions +1 and -1
    per dimension (``dim`` of them: the padding bits dropped); ``float`` as it is."""
    c = np.asarray(codes)
    if precision == "float":
        return c.astype(np.float32)
    if precision in BITS:
        bits = np.unpackbits(as_ubinary(c, precision), axis=-1)[:, :dim]  # (n, dim); dim None: every bit, padding too
        return bits.astype(np.float32) * 2 - 1
    if ranges is None:
        raise ValueError(f"{precision} codes are read back with the ranges they were made on")
    levels = c.astype(np.float64) + (OFFSET if precision == "int8" else 0)
    return (ranges.start + (levels + 0.5) * ranges.step).astype(np.float32)


def as_ubinary(codes: np.ndarray, precision: Precision) -> np.ndarray:
    """Packed bits as bytes 0..255, from either bit precision."""
    c = np.asarray(codes)
    return c.astype(np.uint8) if precision == "ubinary" else (c.astype(np.int16) + OFFSET).astype(np.uint8)


def hamming_similarity(a: np.ndarray, b: np.ndarray, dim: int) -> np.ndarray:
    """``(n, m)`` count of the ``dim`` dimensions on which each of ``a`` ``(n, bytes)`` and ``b`` ``(m, bytes)`` agree
    (both ubinary): ``dim`` less the Hamming distance. The padding bits are 0 on both sides, so they never differ."""
    out = np.empty((len(a), len(b)), np.int32)
    for i, row in enumerate(a):  # one query at a time: (m, bytes) of XORs, not (n, m, bytes)
        out[i] = dim - np.bitwise_count(np.bitwise_xor(row, b)).sum(axis=1, dtype=np.int32)
    return out


def code_bytes(precision: Precision, dim: int) -> int:
    """Bytes of one ``dim``-dimensional vector as ``precision`` codes (float: float32)."""
    if precision == "float":
        return 4 * dim
    return -(-dim // 8) if precision in BITS else dim
