"""A bundle's decoders on ONNX Runtime: vectors → sentences, one decoding step per graph run.

The graph's contract is :class:`thoughtvec.service.bundle.format.DecoderSpec` (``recurrent``: a state carried
from step to step; ``attention``: the words so far, read again at each step). Three ways to choose words:

* greedy: the most probable word at each step;
* beam (Sutskever et al., 2014): the ``width`` best prefixes kept at each step; finished sentences ranked by
  their log-probability per word (so a short sentence does not win by being short);
* sampling: a word drawn from softmax(logits / temperature), from a seeded generator (the same seed, the same words).

Every sentence ends at ``<eos>`` or after ``max_tokens`` words. ``<pad>`` (the start symbol, never a
target) is never chosen. :class:`Rules` may forbid more, in all three: ``<unk>`` (a word the decoder does not
have, which reads as a hole in the sentence), and any word that would repeat an n-gram already in the
sentence (``no_repeat_ngram_size``, as Paulus et al., 2018 block repeated trigrams): small decoders fall into
loops ("the lord is the lord , and the lord ..."), which greedy and beam search never leave by themselves.
A forbidden word is only never chosen: each sentence's ``logprob`` is still the decoder's own (its
probabilities are not renormalised), so it equals :meth:`Decoder.score` of the words. Without rules
(:data:`AS_TRAINED`, the default) the decoders choose as they were trained, which the training side proves
equal to its own (``thoughtvec.training.train.decoders.check_decoder``); no torch here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnxruntime as ort

from thoughtvec.service.bundle.format import Bundle, DecoderSpec
from thoughtvec.service.bundle.vocab import EOS_ID, PAD_ID, UNK, Vocabulary
from thoughtvec.service.errors import BundleError

INPUTS = {"recurrent": ["task", "token", "state", "condition"], "attention": ["tokens", "condition"]}


@dataclass
class Decoded:
    """One decoded sentence: its word ids (``<eos>`` not included), words, and summed log-probability."""

    ids: list[int]
    words: list[str]
    logprob: float

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True, slots=True)
class Rules:
    """What a decoding may not choose besides ``<pad>``: ``<unk>`` unless ``allow_unk``; a word that would make an
    n-gram of ``no_repeat_ngram_size`` words the sentence already has (0: none blocked; 1: no word twice)."""

    allow_unk: bool = True
    no_repeat_ngram_size: int = 0


AS_TRAINED = Rules()  # the decoder's own choices (the export's parity check, the evaluation)


def repeating(seq: Sequence[int], n: int) -> list[int]:
    """The words that, after ``seq``, would complete an ``n``-gram ``seq`` already has: those that followed its
    last ``n - 1`` words wherever they occurred before."""
    if n < 1 or len(seq) < n - 1:
        return []
    tail = tuple(seq[len(seq) - n + 1 :])
    return [seq[i + n - 1] for i in range(len(seq) - n + 1) if tuple(seq[i : i + n - 1]) == tail]


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


class Decoder:
    """One bundle's decoder graph and its words."""

    def __init__(self, bundle: Bundle, *, providers: Sequence[str] | None = None, threads: int | None = None):
        spec = bundle.spec.decoder
        where = bundle.path.name  # loaded at a request's need: its error is an answer, which names no path of the server
        if spec is None:
            raise BundleError(where, "decoder", "the bundle has no decoder")
        self.spec: DecoderSpec = spec
        self.view = str(bundle.spec.decoder_view)
        try:
            vocab = Vocabulary.load(bundle.file(spec.vocabulary))
        except (ValueError, UnicodeDecodeError) as e:
            raise BundleError(where, "decoder.vocabulary", str(e)) from None
        if len(vocab) < spec.vocab_size:
            raise BundleError(where, "decoder.vocab_size", f"is {spec.vocab_size} but {spec.vocabulary} has {len(vocab)} words")
        self.words = vocab.tokens[: spec.vocab_size]
        self.unk = self.words.index(UNK) if UNK in self.words else None
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        if threads:
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
        graph = bundle.file(spec.file)
        try:
            self.session = ort.InferenceSession(str(graph), sess_options=opts, providers=list(providers or ["CPUExecutionProvider"]))
        except Exception as e:  # noqa: BLE001 - onnxruntime's errors derive from Exception alone
            said = str(e).replace(str(graph), graph.name)  # its file by name
            raise BundleError(where, "decoder.file", f"ONNX Runtime cannot load it: {said}") from None
        got = sorted(i.name for i in self.session.get_inputs())
        if got != sorted(INPUTS[spec.kind]):
            raise BundleError(where, "decoder.kind", f"a {spec.kind} decoder takes {INPUTS[spec.kind]}; the graph takes {got}")
        self.dim = bundle.spec.views[self.view].dim

    @property
    def tasks(self) -> tuple[str, ...]:
        return self.spec.tasks

    # -- one step ----------------------------------------------------------------------
    def step(
        self, task: int, prefixes: np.ndarray, state: np.ndarray | None, condition: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Log-probabilities (B, V) of the word after each row of ``prefixes`` (B, T; ``<pad>`` first), and the next state."""
        B = prefixes.shape[0]
        feeds = {"condition": np.ascontiguousarray(condition, np.float32)}
        if self.spec.kind == "recurrent":
            feeds["task"] = np.full(B, task, np.int64)
            feeds["token"] = np.ascontiguousarray(prefixes[:, -1], np.int64)
            feeds["state"] = state if state is not None else np.zeros((B, self.spec.state_dim), np.float32)
            logits, state = self.session.run(["logits", "state_out"], feeds)
        else:
            feeds["tokens"] = np.ascontiguousarray(prefixes, np.int64)
            (logits,) = self.session.run(["logits"], feeds)
        logits = np.asarray(logits, np.float32)
        logits[:, PAD_ID] = -np.inf
        return logits, state

    def task_index(self, task: str) -> int:
        return self.tasks.index(task)

    def allowed(self, logits: np.ndarray, seqs: Sequence[Sequence[int]], rules: Rules) -> np.ndarray:
        """``logits`` (B, V) with what ``rules`` forbid after each row's words ``seqs`` set to -inf: what to choose
        from. A row left with nothing (every word forbidden) may still end: ``<eos>`` keeps its logit."""
        if rules == AS_TRAINED:
            return logits
        out = logits.copy()
        if not rules.allow_unk and self.unk is not None:
            out[:, self.unk] = -np.inf
        if rules.no_repeat_ngram_size:
            for row, seq in enumerate(seqs):
                out[row, repeating(seq, rules.no_repeat_ngram_size)] = -np.inf
        stuck = ~np.isfinite(out).any(-1)
        out[stuck, EOS_ID] = logits[stuck, EOS_ID]
        return out

    def _decoded(self, ids: list[int], logprob: float) -> Decoded:
        ids = ids[:-1] if ids and ids[-1] == EOS_ID else ids
        return Decoded(ids, [self.words[i] for i in ids], float(logprob))

    # -- greedy and sampling: every row at once -----------------------------------------
    def sample(
        self,
        task: str,
        conditions: np.ndarray,
        max_tokens: int,
        temperature: float = 0.0,
        rng: np.random.Generator | None = None,
        rules: Rules = AS_TRAINED,
    ) -> list[Decoded]:
        """One sentence per row of ``conditions`` (B, dim): greedy with ``temperature`` 0, else drawn from
        softmax(logits / T) over the words ``rules`` allow."""
        return self._run(task, conditions, max_tokens, temperature, rng, rules)[0]

    def greedy_trace(self, task: str, conditions: np.ndarray, max_tokens: int) -> tuple[list[list[int]], list[np.ndarray]]:
        """Greedy ids of each row and every step's logits (the export's parity check)."""
        out, steps = self._run(task, conditions, max_tokens, 0.0, None, AS_TRAINED)
        return [d.ids for d in out], steps

    def _run(
        self, task: str, conditions: np.ndarray, max_tokens: int, temperature: float, rng: np.random.Generator | None, rules: Rules
    ) -> tuple[list[Decoded], list[np.ndarray]]:
        t = self.task_index(task)
        B = conditions.shape[0]
        prefixes = np.zeros((B, 1), np.int64)
        state = None
        ids: list[list[int]] = [[] for _ in range(B)]
        logprob = np.zeros(B)
        done = np.zeros(B, bool)
        steps = []
        for _ in range(max_tokens):
            logits, state = self.step(t, prefixes, state, conditions)
            steps.append(logits)
            choose = self.allowed(logits, ids, rules)
            if temperature > 0:
                assert rng is not None
                p = np.exp(log_softmax(choose / temperature))
                nxt = np.array([rng.choice(p.shape[1], p=row / row.sum()) for row in p])
            else:
                nxt = choose.argmax(-1)
            lp = log_softmax(logits)[np.arange(B), nxt]  # the decoder's own probability of the word chosen
            for i in np.flatnonzero(~done):
                ids[i].append(int(nxt[i]))
                logprob[i] += lp[i]
                done[i] = nxt[i] == EOS_ID
            if done.all():
                break
            prefixes = np.concatenate([prefixes, nxt[:, None].astype(np.int64)], 1)
        return [self._decoded(i, lp) for i, lp in zip(ids, logprob)], steps

    # -- beam search: one condition at a time ------------------------------------------
    def beam(self, task: str, condition: np.ndarray, width: int, max_tokens: int, rules: Rules = AS_TRAINED) -> Decoded:
        """The best sentence for one condition (dim,) by beam search of ``width`` over the words ``rules`` allow,
        ranked by log-probability per word."""
        t = self.task_index(task)
        prefixes = np.zeros((1, 1), np.int64)
        scores = np.zeros(1)
        state: np.ndarray | None = None
        finished: list[tuple[float, list[int], float]] = []  # (per-word score, ids, logprob)
        for _ in range(max_tokens):
            cond = np.repeat(condition[None, :], prefixes.shape[0], 0)
            logits, state = self.step(t, prefixes, state, cond)
            total = scores[:, None] + log_softmax(logits)  # (beams, V)
            choose = total  # ranked by the decoder's own log-probability, over the words the rules leave
            if rules != AS_TRAINED:
                allowed = self.allowed(logits, [[int(x) for x in p[1:]] for p in prefixes], rules)
                choose = np.where(np.isfinite(allowed), total, -np.inf)
            flat = np.argsort(-choose, axis=None)[: 2 * width]  # enough to keep width live ones after some finish
            rows, words = np.unravel_index(flat, total.shape)
            keep_rows: list[int] = []
            keep_words: list[int] = []
            for r, w in zip(rows, words):
                if not np.isfinite(choose[r, w]):
                    break  # the rest are forbidden
                seq = [int(x) for x in prefixes[r, 1:]] + [int(w)]
                if w == EOS_ID:
                    finished.append((float(total[r, w]) / len(seq), seq, float(total[r, w])))
                elif len(keep_rows) < width:
                    keep_rows.append(r)
                    keep_words.append(w)
            if not keep_rows or len(finished) >= width:
                break  # width sentences have ended: the search is over
            prefixes = np.concatenate([prefixes[keep_rows], np.array(keep_words, np.int64)[:, None]], 1)
            scores = total[keep_rows, keep_words]
            state = state[keep_rows] if state is not None else None
        else:
            for r in range(prefixes.shape[0]):  # out of words: the live prefixes count as they are
                seq = [int(x) for x in prefixes[r, 1:]]
                finished.append((scores[r] / max(1, len(seq)), seq, float(scores[r])))
        _, ids, logprob = max(finished, key=lambda f: f[0])
        return self._decoded(ids, logprob)

    # -- scoring ---------------------------------------------------------------------
    def score(self, task: str, condition: np.ndarray, ids: Sequence[int]) -> float:
        """Summed log-probability of the words ``ids`` followed by ``<eos>``, given one condition (teacher forcing)."""
        t = self.task_index(task)
        target = list(ids) + [EOS_ID]
        prefixes = np.zeros((1, 1), np.int64)
        state = None
        total = 0.0
        for w in target:
            logits, state = self.step(t, prefixes, state, condition[None, :])
            total += float(log_softmax(logits)[0, w])
            prefixes = np.concatenate([prefixes, np.array([[w]], np.int64)], 1)
        return total
