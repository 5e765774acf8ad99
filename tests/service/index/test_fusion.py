"""Fusion of a dense and a lexical ranking: reciprocal rank, min-max and standardised scores, by hand."""

from __future__ import annotations

import math
import statistics

import pytest

from thoughtvec.service.index.fusion import Fusion, minmax, rrf, zscore

DENSE = [("a", 0.9), ("b", 0.7), ("c", 0.1)]
LEXICAL = [("c", 12.0), ("a", 4.0), ("d", 2.0)]


def test_rrf_by_hand():
    got = dict(rrf([DENSE, LEXICAL], [1.0, 2.0], k=10))
    assert got["a"] == pytest.approx(1 / 11 + 2 / 12)
    assert got["c"] == pytest.approx(1 / 13 + 2 / 11)
    assert got["b"] == pytest.approx(1 / 12) and got["d"] == pytest.approx(2 / 13)
    assert [d for d, _ in rrf([DENSE, LEXICAL], [1.0, 2.0], k=10)] == ["c", "a", "d", "b"]


def test_minmax_by_hand():
    got = dict(minmax([DENSE, LEXICAL], [1.0, 0.5]))
    assert got["a"] == pytest.approx(1.0 + 0.5 * 0.2)
    assert got["b"] == pytest.approx(0.75) and got["c"] == pytest.approx(0.5) and got["d"] == pytest.approx(0.0)


def test_zscore_by_hand_an_absent_document_gets_the_rankings_lowest():
    def z(ranking):
        scores = [s for _, s in ranking]
        mean, sd = statistics.fmean(scores), statistics.pstdev(scores)
        return {d: (s - mean) / sd for d, s in ranking}

    zd, zl = z(DENSE), z(LEXICAL)
    got = dict(zscore([DENSE, LEXICAL], [1.0, 0.5]))
    assert got["a"] == pytest.approx(zd["a"] + 0.5 * zl["a"])
    assert got["b"] == pytest.approx(zd["b"] + 0.5 * min(zl.values()))  # b has no lexical score
    assert got["d"] == pytest.approx(min(zd.values()) + 0.5 * zl["d"])  # d has no dense score
    assert [d for d, _ in zscore([DENSE, LEXICAL], [1.0, 0.5])] == ["a", "b", "c", "d"]


@pytest.mark.parametrize(
    ("fusion", "fused", "relevance"),
    [
        (Fusion("minmax", 1.5), 2.5, 1.0),  # the best of both rankings
        (Fusion("minmax", 1.5), 0.0, 0.0),
        (Fusion("rrf", 1.0, rrf_k=10), 2 / 11, 1.0),  # first in both
        (Fusion("zscore", 0.5), 0.0, 0.5),  # the mean of both
        (Fusion("zscore", 0.5), 1.5, 1 / (1 + math.exp(-1))),  # a standard deviation above the mean of both
    ],
)
def test_relevance_puts_a_fused_score_on_0_1(fusion, fused, relevance):
    assert fusion.relevance(fused) == pytest.approx(relevance)


def test_a_ranking_of_equal_scores_and_an_empty_one():
    assert minmax([[("x", 3.0), ("y", 3.0)], []], [1.0, 1.0]) == [("x", 1.0), ("y", 1.0)]
    assert zscore([[("x", 3.0), ("y", 3.0)], []], [1.0, 1.0]) == [("x", 0.0), ("y", 0.0)]
    assert rrf([[], LEXICAL], [1.0, 1.0], k=0)[0] == ("c", 1.0)


def test_ties_keep_first_appearance_dense_first():
    assert [d for d, _ in rrf([[("a", 1.0)], [("b", 1.0)]], [1.0, 1.0])] == ["a", "b"]


@pytest.mark.parametrize("method", ["rrf", "minmax", "zscore"])
def test_fusion_cuts_at_k(method):
    f = Fusion(method, lexical_weight=1.0, rrf_k=60)
    assert len(f.fuse(DENSE, LEXICAL, 2)) == 2 and len(f.fuse(DENSE, LEXICAL, 10)) == 4


@pytest.mark.parametrize("method", ["rrf", "minmax", "zscore"])
def test_the_parts_of_each_fused_score_are_what_each_ranking_added(method):
    fusion = Fusion(method=method, lexical_weight=0.5, rrf_k=10)
    parts = fusion.parts(DENSE, LEXICAL)
    fused = fusion.fuse(DENSE, LEXICAL, 10)
    assert [d for d, _ in fused] == sorted(parts, key=lambda d: -sum(parts[d]))
    for doc, score in fused:
        assert parts[doc][0] + parts[doc][1] == score  # exactly the score ranked by
    if method != "zscore":  # absent from a ranking: nothing from it
        assert parts["d"][0] == 0.0 and parts["b"][1] == 0.0
    if method == "rrf":
        assert parts["c"] == pytest.approx((1 / 13, 0.5 / 11))


@pytest.mark.parametrize("method", ["rrf", "minmax", "zscore"])
def test_combined_fuses_any_number_of_rankings_as_fuse_fuses_two(method):
    dense = [("a", 0.9), ("b", 0.5), ("c", 0.1)]
    lexical = [("c", 7.0), ("d", 3.0), ("a", 1.0)]
    third = [("d", 0.8), ("b", 0.4)]
    f = Fusion(method, 1.5, 20)
    assert f.combined([dense, lexical], [1.0, 1.5]) == f.fuse(dense, lexical, 10)
    by_function = {"rrf": lambda r, w: rrf(r, w, 20), "minmax": minmax, "zscore": zscore}[method]
    assert f.combined([dense, third, lexical], [1.0, 2.0, 1.5]) == by_function([dense, third, lexical], [1.0, 2.0, 1.5])
