"""The decoders trained with the encoder, exported as one ONNX graph that runs one decoding step.

The bundle contract is :class:`thoughtvec.service.bundle.format.DecoderSpec`; the service decodes with
:mod:`thoughtvec.service.core.decoding`. Two kinds:

* ``recurrent`` — skip-thought's conditional GRU decoders (eq. 5-8) for the previous and the next sentence,
  both in one graph with the shared vocabulary matrix V (eq. 9): ``(task, token, state, condition) →
  (logits, state_out)``. One step of PyTorch's GRU written out (gates r, z, n, reset after the recurrent
  product, as the trained ``nn.GRU`` computes it), so both decoders share one graph and one V.
* ``attention`` — the mean-max AAE's decoder (eq. 15-21): ``(tokens, condition) → logits`` for the word
  after ``tokens``; the memory [mean, max] is rebuilt from the ``mean_max`` vector. It reads only the output
  vocabulary's words (what it generates), so the graph keeps their rows of the input table, not all of it.

The invertible-decoder family has no generator: its decoder maps a vector to a point in word-vector space
(a bag of words), not to a sentence, so its bundles carry none.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import numpy as np
import onnx
import torch
from torch import nn

from thoughtvec.service.bundle.format import DecoderSpec
from thoughtvec.service.bundle.vocab import EOS_ID, UNK_ID

DECODER_VOCAB = "decoder-vocab.txt"  # the AAE's output words (the skip-thought decoders speak vocab.txt)
STEP_PARITY_TOL = 1e-4  # relative: ||onnx − torch|| / ||torch|| of the first step's logits
DECODE_PARITY_TOL = 1e-3  # the same at every step of a greedy decode (rounding differences carried in the state grow)


@dataclass
class DecoderExport:
    """What a family hands the export: the torch step module and the fields of its ``DecoderSpec``."""

    step: nn.Module
    kind: str  # recurrent | attention
    tasks: tuple[str, ...]
    output: str  # the encoder graph output the decoders read
    vocab_size: int
    state_dim: int
    max_tokens: int
    description: str
    words: list[str] | None = None  # its own vocabulary (DECODER_VOCAB); None: the bundle's vocab.txt

    def spec(self, opset: int, weights_dtype: str, vector_norm: float) -> DecoderSpec:
        return DecoderSpec(
            kind=self.kind,
            tasks=self.tasks,
            output=self.output,
            vocabulary=DECODER_VOCAB if self.words is not None else "vocab.txt",
            vocab_size=self.vocab_size,
            state_dim=self.state_dim,
            max_tokens=self.max_tokens,
            vector_norm=vector_norm,
            weights_dtype=weights_dtype,
            opset=opset,
            description=self.description,
        )


class Rows(nn.Module):
    """A (V, D) word table (input embeddings, the output matrix), in float or, after :meth:`to_int8`, as int8 rows
    with one scale each (``w ≈ q · s``): the compact bundle's decoders keep their two vocabulary-sized tables at a
    quarter of float32, half of fp16 (skip-thought's decoders are mostly these two tables)."""

    w: torch.Tensor  # the float rows, until to_int8
    q: torch.Tensor | None  # the int8 rows and their scales, after
    s: torch.Tensor | None

    def __init__(self, w: torch.Tensor):
        super().__init__()
        self.register_buffer("w", w.detach().clone().float())  # (V, D)
        self.register_buffer("q", None)
        self.register_buffer("s", None)

    def to_int8(self) -> None:
        w = self.w
        s = (w.abs().amax(1, keepdim=True) / 127.0).clamp(min=1e-12)  # (V, 1)
        self.register_buffer("q", torch.round(w / s).clamp(-127, 127).to(torch.int8))  # (V, D)
        self.register_buffer("s", s)
        del self.w

    def lookup(self, ids: torch.Tensor) -> torch.Tensor:
        """(…) ids → (…, D) rows."""
        if self.q is None or self.s is None:
            return self.w[ids]
        return self.q[ids].float() * self.s[ids]

    def table(self) -> torch.Tensor:
        if self.q is None or self.s is None:
            return self.w
        return self.q.float() * self.s  # (V, D)


def compact(step: nn.Module) -> None:
    """Store the step module's word tables as int8 rows (the export's default, with fp16 weights elsewhere)."""
    for m in step.modules():
        if isinstance(m, Rows):
            m.to_int8()


class GRUDecoderStep(nn.Module):
    """Both conditional GRU decoders of a skip-thought model, one step, the task chosen per row."""

    def __init__(self, emb: torch.Tensor, grus: list[nn.GRU], proj: nn.Linear):
        super().__init__()
        keep = lambda t: nn.Parameter(t.detach().clone(), requires_grad=False)  # noqa: E731
        self.emb = Rows(emb)  # (V, E); row 0 (<pad>) is the zero start input
        w_ih, w_hh, b_ih, b_hh = (
            [torch.as_tensor(getattr(g, f)) for g in grus] for f in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")
        )
        self.w_ih = keep(torch.stack(w_ih))  # (K, 3H, E + D): [W^d | C] per gate
        self.w_hh = keep(torch.stack(w_hh))  # (K, 3H, H)
        self.b_ih = keep(torch.stack(b_ih))  # (K, 3H)
        self.b_hh = keep(torch.stack(b_hh))  # (K, 3H)
        self.v = Rows(proj.weight)  # (V, H): eq. 9's vocabulary matrix, shared
        self.v_bias = None if proj.bias is None else keep(proj.bias)

    def forward(self, task: torch.Tensor, token: torch.Tensor, state: torch.Tensor, condition: torch.Tensor):
        B, H = state.shape
        pick = task.view(B, 1, 1).expand(B, 1, 3 * H)
        x = torch.cat([self.emb.lookup(token), condition], -1)  # (B, E + D): [x_{t-1}; h_i]
        gi = torch.gather(torch.einsum("bi,kgi->bkg", x, self.w_ih) + self.b_ih, 1, pick).squeeze(1)  # (B, 3H)
        gh = torch.gather(torch.einsum("bi,kgi->bkg", state, self.w_hh) + self.b_hh, 1, pick).squeeze(1)  # (B, 3H)
        r = torch.sigmoid(gi[:, :H] + gh[:, :H])  # eq. 5
        z = torch.sigmoid(gi[:, H : 2 * H] + gh[:, H : 2 * H])  # eq. 6's update gate
        n = torch.tanh(gi[:, 2 * H :] + r * gh[:, 2 * H :])  # eq. 7, reset after the recurrent product
        h = (1 - z) * n + z * state  # eq. 8, (B, H)
        logits = h @ self.v.table().t()  # (B, V)
        if self.v_bias is not None:
            logits = logits + self.v_bias
        return logits, h


class AttentionDecoderStep(nn.Module):
    """The AAE's decoder over a prefix of output-vocabulary words; logits of the next word."""

    pe: torch.Tensor  # a buffer: the positional encodings

    def __init__(self, model, from_out: np.ndarray, pooling: str):
        super().__init__()
        words = model.decoder.words
        table = words.table[torch.from_numpy(from_out)].clone()  # (V_out, d_w): each output word's input vector
        table[EOS_ID] = words.eos.detach()  # </S> has a trained vector
        self.table = Rows(table)
        self.register_buffer("pe", words.pe.clone())  # (max_positions, d_w), eq. 1-2
        self.decoder = model.decoder
        self.out = Rows(model.out.proj.weight)  # eq. 21: (V_out, d_m) and a bias
        self.out_bias = nn.Parameter(model.out.proj.bias.detach().clone(), requires_grad=False)
        self.pooling = pooling
        self.d_model = model.cfg.d_model

    def forward(self, tokens: torch.Tensor, condition: torch.Tensor) -> torch.Tensor:
        y = self.table.lookup(tokens) + self.pe[: tokens.shape[1]]  # (B, T, d_w)
        if self.pooling == "mean-max":  # the mean_max view is [max, mean]; the memory is [mean, max] (eq. 14, 17)
            memory = torch.stack([condition[:, self.d_model :], condition[:, : self.d_model]], 1)  # (B, 2, d_m)
        else:
            memory = condition.unsqueeze(1)  # (B, 1, d_m)
        mask = torch.ones_like(tokens, dtype=torch.bool)  # every prefix word is real
        h = self.decoder.states(y, mask, memory)  # (B, T, d_m)
        return h[:, -1] @ self.out.table().t() + self.out_bias  # (B, V_out)


def skipthought_decoder(cfg, model, output: str, vocab_size: int) -> DecoderExport:
    return DecoderExport(
        step=GRUDecoderStep(model.emb.weight, [model.dec_prev, model.dec_next], model.out.proj).eval(),
        kind="recurrent",
        tasks=("previous", "next"),
        output=output,
        vocab_size=vocab_size,
        state_dim=cfg.dec_hidden,
        max_tokens=cfg.max_len,
        description=f"conditional GRU decoders ({cfg.dec_hidden}) of the previous and the next sentence, given the '{output}' vector (eq. 5-9)",
    )


def aae_decoder(cfg, model, prepared) -> DecoderExport:
    out_words = list(prepared.state["out_words"])
    index = prepared.vocab.index
    from_out = np.array([index.get(w, UNK_ID) for w in out_words], np.int64)  # output id → input id
    output = {"mean-max": "mean_max", "mean": "mean", "max": "max"}[cfg.pooling]
    return DecoderExport(
        step=AttentionDecoderStep(model, from_out, cfg.pooling).eval(),
        kind="attention",
        tasks=("reconstruct",),
        output=output,
        vocab_size=len(out_words),
        state_dim=0,
        max_tokens=cfg.max_len,
        description=f"attention decoder (d_m {cfg.d_model}) reconstructing the sentence from its {cfg.pooling} memory (eq. 15-21)",
        words=out_words,
    )


def decoder_to_onnx(dec: DecoderExport, condition_dim: int, opset: int) -> onnx.ModelProto:
    """The step module as an ONNX graph with dynamic batch (and, for attention, prefix length) axes."""
    B = 3
    task = torch.zeros(B, dtype=torch.int64)
    cond = torch.randn(B, condition_dim)
    if dec.kind == "recurrent":
        args: tuple = (task, torch.tensor([0, 5, 7]), torch.zeros(B, dec.state_dim), cond)
        names, outputs = ["task", "token", "state", "condition"], ["logits", "state_out"]
        axes = {"task": {0: "batch"}, "token": {0: "batch"}, "state": {0: "batch"}, "condition": {0: "batch"}}
        axes |= {"logits": {0: "batch"}, "state_out": {0: "batch"}}
    else:
        args = (torch.tensor([[0, 5, 7, 4]] * B), cond)
        names, outputs = ["tokens", "condition"], ["logits"]
        axes = {"tokens": {0: "batch", 1: "time"}, "condition": {0: "batch"}, "logits": {0: "batch"}}
    buf = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            dec.step,
            args,
            buf,  # type: ignore[arg-type]  # torch annotates a path, but the TorchScript exporter writes to a file object too
            dynamo=False,
            input_names=names,
            output_names=outputs,
            dynamic_axes=axes,
            opset_version=opset,
            do_constant_folding=False,
        )
    # no folding: it would store the int8 tables' products with their scales as float (ONNX Runtime folds them at load)
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model)
    return model


@torch.no_grad()
def torch_greedy(dec: DecoderExport, task: int, condition: torch.Tensor, max_tokens: int) -> tuple[list[list[int]], list[np.ndarray]]:
    """Greedy decoding with the torch step module: the token ids of each row (``<eos>`` ends one) and each step's logits."""
    B = condition.shape[0]
    tasks = torch.full((B,), task, dtype=torch.int64)
    prefix = torch.zeros((B, 1), dtype=torch.int64)  # <pad>: the start
    state = torch.zeros(B, dec.state_dim)
    out: list[list[int]] = [[] for _ in range(B)]
    done = [False] * B
    steps = []
    for _ in range(max_tokens):
        if dec.kind == "recurrent":
            logits, state = dec.step(tasks, prefix[:, -1], state, condition)
        else:
            logits = dec.step(prefix, condition)
        logits = logits.clone()
        logits[:, 0] = -torch.inf  # <pad> is never a word
        steps.append(logits.numpy())
        nxt = logits.argmax(-1)
        for i in range(B):
            if not done[i]:
                out[i].append(int(nxt[i]))
                done[i] = int(nxt[i]) == EOS_ID
        if all(done):
            break
        prefix = torch.cat([prefix, nxt.unsqueeze(1)], 1)
    return [ids[:-1] if ids and ids[-1] == EOS_ID else ids for ids in out], steps


def check_decoder(dec: DecoderExport, decoder, conditions: np.ndarray, max_tokens: int = 20) -> dict:
    """The served decoder (``thoughtvec.service.core.decoding.Decoder``, ONNX Runtime) against the torch step
    module: every greedy step's logits (relative error) and the decoded words, for each task. Raises on a mismatch."""
    first, worst, sentences = 0.0, 0.0, 0
    cond = torch.from_numpy(conditions.astype(np.float32))
    for t, task in enumerate(dec.tasks):
        ref, ref_steps = torch_greedy(dec, t, cond, max_tokens)
        got, got_steps = decoder.greedy_trace(task, conditions, max_tokens)
        errs = []
        for a, b in zip(ref_steps, got_steps):
            a, b = a[:, 1:], b[:, 1:]  # <pad>'s -inf left out
            errs.append(float((np.linalg.norm(b - a, axis=1) / np.maximum(np.linalg.norm(a, axis=1), 1e-6)).max()))
        first, worst = max(first, errs[0]), max(worst, *errs)
        if got != ref:
            raise RuntimeError(f"decoder parity failed: task {task}: ONNX decoded {got[:2]}..., torch {ref[:2]}...")
        sentences += len(ref)
    if first > STEP_PARITY_TOL or worst > DECODE_PARITY_TOL:
        raise RuntimeError(
            f"decoder parity failed: logits relative error {first:.2e} at the first step (limit {STEP_PARITY_TOL}), "
            f"{worst:.2e} at any step (limit {DECODE_PARITY_TOL})"
        )
    return {"step_max_rel_err": first, "decode_max_rel_err": worst, "greedy_decodes_equal": sentences}
