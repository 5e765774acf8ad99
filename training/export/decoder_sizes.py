"""The size of the decoder graph (``decoder.onnx``) at each family's default config, float32 and compact:
``python -m thoughtvec.training.export.decoder_sizes`` (untrained models: the size depends on the shapes alone)."""

from __future__ import annotations

import numpy as np

from thoughtvec.service.bundle.vocab import SPECIALS, Vocabulary
from thoughtvec.training.export.onnx_export import OPSET, round_to_fp16, store_weights_fp16
from thoughtvec.training.train.decoders import aae_decoder, compact, decoder_to_onnx, skipthought_decoder
from thoughtvec.training.train.families.aae import AAEConfig, MeanMaxAAE
from thoughtvec.training.train.families.base import Prepared
from thoughtvec.training.train.families.skipthought import SkipThought, SkipThoughtConfig


def default_sizes() -> dict[str, dict[str, float]]:
    """MB of the decoder graph of an untrained model of each family's default config, float32 and compact (the
    export's default): what a bundle of that size gains. ``python -m thoughtvec.training.export.decoder_sizes``."""
    st, aae = SkipThoughtConfig(), AAEConfig()
    n_st, n_in, n_out = st.vocab_size + 3, aae.input_words + 3, aae.out_vocab + 3
    words = list(SPECIALS) + [f"w{i}" for i in range(n_in - 3)]
    table = np.zeros((n_in, 50), np.float32)  # GloVe 6B 50d's width
    builds = {
        "uni-skip": (lambda: skipthought_decoder(st, SkipThought(st, n_st, np.ones(n_st)), "uni", n_st), st.hidden),
        "mean-max-aae": (lambda: aae_decoder(aae, MeanMaxAAE(aae, table, np.ones(n_out), np.zeros(n_in, np.int64)),
                                             Prepared(Vocabulary(words), {"out_words": words[:n_out]})), 2 * aae.d_model),
    }  # fmt: skip
    out = {}
    for name, (build, dim) in builds.items():
        sizes = {}
        for kind in ("float32", "compact"):
            dec = build()
            if kind == "compact":
                compact(dec.step)
                round_to_fp16(dec.step)
            proto = decoder_to_onnx(dec, dim, OPSET)
            sizes[kind] = round(len((store_weights_fp16(proto) if kind == "compact" else proto).SerializeToString()) / 1e6, 1)
        out[name] = sizes
    return out


if __name__ == "__main__":
    for name, sizes in default_sizes().items():
        print(f"{name}: decoder.onnx {sizes['compact']} MB compact (float32: {sizes['float32']} MB)")
