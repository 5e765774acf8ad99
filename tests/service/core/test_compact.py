"""Compact codes (``core/compact.py``): bits packed exactly, levels on fixed ranges, each vector coded alone."""

from __future__ import annotations

import numpy as np
import pytest

from thoughtvec.service.core.compact import PRECISIONS, Ranges, code_bytes, dequantize, hamming_similarity, quantize


@pytest.fixture
def vectors() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((50, 20)).astype(np.float32)  # 20 dimensions: not a multiple of 8


def test_bits_are_packed_eight_to_a_byte_first_dimension_highest_padded_with_zeros():
    x = np.array([[0.5, -1, 0, 2, -0.1, 3, 4, -5, 0.01, -2], [-1] * 10], np.float32)  # 10 dimensions: 2 bytes each
    # dims above 0: 1 0 0 1 0 1 1 0 | 1 0 (then 6 zero bits of padding)
    np.testing.assert_array_equal(quantize(x, "ubinary"), np.array([[0b10010110, 0b10000000], [0, 0]], np.uint8))
    np.testing.assert_array_equal(quantize(x, "binary"), np.array([[0b10010110 - 128, 0b10000000 - 128], [-128, -128]], np.int8))
    assert quantize(x, "binary").dtype == np.int8 and quantize(x, "ubinary").dtype == np.uint8


def test_int8_is_uint8_less_128_and_binary_ubinary_less_128(vectors):
    r = Ranges.of(vectors)
    u, i = quantize(vectors, "uint8", r), quantize(vectors, "int8", r)
    np.testing.assert_array_equal(i.astype(np.int16), u.astype(np.int16) - 128)
    ub, b = quantize(vectors, "ubinary"), quantize(vectors, "binary")
    np.testing.assert_array_equal(b.astype(np.int16), ub.astype(np.int16) - 128)


def test_levels_span_the_calibration_and_clip_past_it(vectors):
    r = Ranges.of(vectors)
    u = quantize(vectors, "uint8", r)
    assert (u.min(axis=0) == 0).all() and (u.max(axis=0) == 255).all()  # each dimension's minimum and maximum are the ends
    beyond = np.stack([vectors.min(axis=0) - 10, vectors.max(axis=0) + 10])
    np.testing.assert_array_equal(quantize(beyond, "uint8", r), [[0] * 20, [255] * 20])
    np.testing.assert_array_equal(quantize(beyond, "int8", r), [[-128] * 20, [127] * 20])


def test_a_vectors_codes_are_the_same_alone_and_in_any_batch(vectors):
    r = Ranges.of(vectors[:30])  # fixed ranges: from a calibration set, not from the vectors coded
    for p in PRECISIONS:
        whole = quantize(vectors, p, r)
        for i in (0, 7, 49):
            np.testing.assert_array_equal(quantize(vectors[i : i + 1], p, r)[0], whole[i])
        np.testing.assert_array_equal(quantize(vectors[::-1], p, r)[::-1], whole)


def test_read_back_within_half_a_step(vectors):
    r = Ranges.of(vectors)
    for p in ("int8", "uint8"):
        back = dequantize(quantize(vectors, p, r), p, r)
        err = np.abs(back - vectors)  # (n, dim)
        assert (err <= r.step / 2 + 1e-6).all(), (p, float((err - r.step / 2).max()))
    signs = dequantize(quantize(vectors, "binary"), "binary", dim=20)
    np.testing.assert_array_equal(signs, np.where(vectors > 0, 1.0, -1.0))


def test_a_dimension_that_never_varies_codes_as_zero():
    calib = np.array([[1.0, 0.5], [1.0, -0.5]], np.float32)
    r = Ranges.of(calib)
    assert r.step[0] == 1.0
    np.testing.assert_array_equal(quantize(calib, "uint8", r), [[0, 255], [0, 0]])


def test_hamming_similarity_counts_the_agreeing_dimensions(vectors):
    a, b = quantize(vectors[:5], "ubinary"), quantize(vectors, "ubinary")
    want = ((vectors[:5, None, :] > 0) == (vectors[None, :, :] > 0)).sum(axis=2)  # (5, 50)
    np.testing.assert_array_equal(hamming_similarity(a, b, 20), want)
    assert (np.diag(hamming_similarity(a, a, 20)) == 20).all()


def test_code_bytes_and_what_is_refused(vectors):
    assert [code_bytes(p, 384) for p in PRECISIONS] == [1536, 384, 384, 48, 48]
    assert code_bytes("binary", 20) == 3
    with pytest.raises(ValueError, match="needs the ranges of 20 dimensions"):
        quantize(vectors, "int8")
    with pytest.raises(ValueError, match="needs the ranges of 20 dimensions; got 3"):
        quantize(vectors, "uint8", Ranges.of(np.zeros((2, 3))))
    with pytest.raises(ValueError, match="not one of"):
        quantize(vectors, "int4")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty"):
        Ranges.of(np.zeros((0, 3)))
