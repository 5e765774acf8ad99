"""MODEL_CARD.md, generated for every bundle at export: data, dimensions, training, deviations from
the paper, export checks, and Table-2-style nearest neighbours found with the exported graph."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np

from thoughtvec.service.bundle.atomic import atomic_write_text
from thoughtvec.service.bundle.format import Bundle, load_bundle
from thoughtvec.service.bundle.tokenizer import tokenize
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.train.data import corpus_documents


def neighbour_examples(
    encoder: Encoder, corpus: str, sample: int, views: list[str], queries: int = 5, seed: int = 7
) -> dict[str, list[tuple[str, str, float]]]:
    """Per view, (query, nearest other corpus sentence, cosine) for ``queries`` random queries among
    ``sample`` corpus sentences of 6–30 tokens, as in the skip-thought paper's Table 2. The sample
    is drawn and encoded once for all views."""
    rng = np.random.default_rng(seed)
    sents = list({s: None for doc in corpus_documents(corpus) for s in doc if 6 <= len(tokenize(s)) <= 30})
    if len(sents) > sample:
        sents = [sents[i] for i in sorted(rng.choice(len(sents), sample, replace=False))]
    keys = [" ".join(tokenize(s)) for s in sents]
    picks = rng.choice(len(sents), min(queries, len(sents)), replace=False)
    out: dict[str, list[tuple[str, str, float]]] = {}
    for view, vecs in encoder.encode_views(sents, views).items():
        rows = []
        for qi in picks:
            sims = vecs @ vecs[qi]
            j = next(j for j in np.argsort(-sims) if j != qi and keys[j] != keys[qi])
            rows.append((sents[qi], sents[j], float(sims[j])))
        out[view] = rows
    return out


def views_table(spec) -> list[str]:
    """The card's ``## Views`` section (heading, table) for a bundle spec."""
    return ["## Views", "", "| view | dim | pooling | description |", "|---|---:|---|---|"] + [
        f"| `{n}` | {v.dim} | {v.pooling} | {v.description} |" for n, v in spec.views.items()
    ]


def set_card_section(card: Path, heading: str, body: str) -> None:
    """Write ``heading`` + ``body`` into the card at ``card``: in place of that section (up to the next
    ``## `` heading) when it is there, else at the end. Every other section is kept as it is."""
    text = card.read_text(encoding="utf-8")
    section = f"{heading}\n\n{body.strip()}\n"
    start = text.find(f"\n{heading}\n") + 1 if f"\n{heading}\n" in text else -1
    if start < 0:
        text = text.rstrip() + "\n\n" + section
    else:
        end = text.find("\n## ", start + len(heading))
        text = text[:start] + section + (text[end:] if end >= 0 else "")
    atomic_write_text(card, text)


def refresh_card(bundle_dir: Path) -> None:
    """Bring a card's default view and ``## Views`` table in line with the bundle's ``bundle.json``
    (after ``thoughtvec postprocess`` changed them); the rest of the card is left as written."""
    card = Path(bundle_dir) / "MODEL_CARD.md"
    if not card.is_file():
        return
    spec = load_bundle(bundle_dir).spec
    text = card.read_text(encoding="utf-8")
    atomic_write_text(card, re.sub(r"^\| default view \| `[^`]*` \|$", f"| default view | `{spec.default_view}` |", text, flags=re.M))
    heading, _, *table = views_table(spec)
    set_card_section(card, heading, "\n".join(table))


def corpus_composition(corpus_path: str) -> str:
    """What the corpus is made of, from the ``stats.json`` its build wrote beside it: the public-domain
    share, the sources under other terms, and the in-domain text for SentEval's review tasks."""
    stats = Path(corpus_path).with_name("stats.json")
    if not stats.is_file():
        return "Its sources and their licences are listed in the docs' Training page (*The corpus*)."
    d = json.loads(stats.read_text(encoding="utf-8"))
    total = d["tokens"] or 1
    src = d["sources"]
    pd_share = sum(v["tokens"] for v in src.values() if v.get("public_domain")) / total
    other = sorted(((k, v) for k, v in src.items() if not v.get("public_domain")), key=lambda kv: -kv[1]["tokens"])
    parts = [f"{k} {100 * v['tokens'] / total:.1f} % ({v['licence'].split(';')[0]})" for k, v in other]
    text = (
        f"Not all of it is public domain: public-domain texts are {100 * pd_share:.0f} % of the tokens; the rest is "
        f"under other terms, mostly for research use: {', '.join(parts)}."
    )
    if "imdb" in src:
        text += (
            f" IMDB movie reviews ({100 * src['imdb']['tokens'] / total:.0f} % of the tokens) are in-domain for SentEval's "
            "MR, SST-2, CR and SUBJ (movie and product reviews, subjectivity of movie text): those scores may gain "
            "from it; the sentences of the evaluation sets themselves were removed from the corpus."
        )
    return text


def _vocabulary_line(spec) -> str:
    v = spec.vocabulary
    if v.trained_size == v.size:
        return f"{v.size:,} words"
    how = "read from the same fixed word vectors" if spec.family == "invertible-decoder" else "by vocabulary expansion"
    return f"{v.size:,} words: {v.trained_size:,} trained + {v.size - v.trained_size:,} {how}"


def run_summary(ck: dict) -> dict:
    """The checkpoint's ``final`` summary; for an unfinished run's checkpoint, the same figures from
    its progress and its run's ``train_log.jsonl`` up to that step (the card never shows ``nan``)."""
    if ck.get("final"):
        return ck["final"]
    p = ck["progress"]
    log_file = Path(ck["train_config"].get("out") or f"runs/{ck['variant']}") / "train_log.jsonl"
    entries = [json.loads(x) for x in log_file.read_text().splitlines()] if log_file.is_file() else []
    entries = [e for e in entries if e.get("step", 0) <= p["step"]]
    losses = [e["loss"] for e in entries if "loss" in e][-20:]
    evals = [e["eval"] for e in entries if "eval" in e]
    epochs = [e["epoch"] for e in entries if "epoch" in e]
    out = {"steps": p["step"], "epochs": epochs[-1] if epochs else 0.0, "wall_time_s": p["seconds"],
           "device": f"{ck['train_config'].get('device', '?')} (unfinished run)", "validation": evals[-1] if evals else {}}  # fmt: skip
    if losses:
        out["final_loss"] = sum(losses) / len(losses)
    return out


def write_model_card(bundle: Bundle, encoder: Encoder, family, cfgs, cks, report, checks, corpus, sample) -> None:
    spec = bundle.spec
    lines = [f"# {spec.name}", "", f"{spec.description}", ""]
    lines += ["| | |", "|---|---|", f"| family | {spec.family} |", f"| variant | {spec.variant} |",
              f"| default view | `{spec.default_view}` |", f"| max input tokens | {spec.max_input_tokens} |",
              f"| vocabulary | {_vocabulary_line(spec)} |",
              f"| weights | {spec.onnx.weights_dtype}, ONNX opset {spec.onnx.opset} |", ""]  # fmt: skip
    lines += views_table(spec)
    c = cks[0]["corpus"]
    lines += ["", "## Data", "", f"Trained on `{c['path']}` (sha1 `{c['sha1'][:12]}`): {c['sentences']:,} sentences, "
              f"{c['documents']:,} documents, {c['tokens']:,} tokens — the default corpus of `thoughtvec corpus build` "
              "(see the docs' Training page, *The corpus*). " + corpus_composition(c["path"]), ""]  # fmt: skip
    lines += [
        "## Training",
        "",
        "| part | steps | epochs | wall time | device | final loss | validation |",
        "|---|---:|---:|---:|---|---:|---|",
    ]
    for ck in cks:
        f = run_summary(ck)
        val = ", ".join(f"{k} {v:.4f}" for k, v in (f.get("validation") or {}).items())
        wall = f.get("wall_time_s", ck["progress"]["seconds"])
        lines.append(f"| {ck['variant']} | {ck['progress']['step']:,} | {f.get('epochs', 0):.2f} | {wall / 3600:.2f} h | "
                     f"{f.get('device', '?')} ×{f.get('processes', 1)} | {f.get('final_loss', float('nan')):.4f} | {val} |")  # fmt: skip
    lines += ["", "Model configuration" + (" (per part)" if len(cks) > 1 else "") + ":", ""]
    for ck in cks:
        lines += ["```json", json.dumps(ck["model_config"], indent=None), "```"]
        t = ck["train_config"]
        lines += [f"Optimiser: Adam, lr {t['lr']}, batch {t['batch_size']}, gradient-norm clip {t['clip']}, seed {t['seed']}.", ""]
    for ck in cks:
        run_png = Path(ck["train_config"]["out"] or f"runs/{ck['variant']}") / "loss.png"
        if run_png.exists():
            name = f"loss_{ck['variant']}.png"
            shutil.copy(run_png, bundle.path / name)
            lines += [f"![training loss of {ck['variant']}]({name})", ""]
    devs = family.deviations(cfgs)
    for ck in cks:
        f = run_summary(ck)
        if not ck.get("final"):
            devs.append(
                f"{ck['variant']} was exported from an unfinished run's checkpoint at step {ck['progress']['step']:,} "
                f"({f['epochs']:.2f} epochs; see the held-out validation in the training log)."
            )
        elif f.get("epochs", 1.0) < 0.99:
            devs.append(
                f"{ck['variant']} saw {f['epochs']:.2f} of one epoch ({ck['progress']['step']:,} steps, "
                f"{f.get('wall_time_s', 0) / 3600:.2f} h): training stopped at the run's time or step limit, "
                "so the batches were a random part of the whole corpus."
            )
    if devs:
        lines += ["## Deviations from the paper", ""] + [f"- {d}" for d in devs] + [""]
    for title, md in family.card_sections(cfgs, report, bundle.path):
        lines += [f"## {title}", "", md, ""]
    lines += ["## Export checks", "", f"Checked on {checks['sentences']} corpus sentences through the service's own ONNX Runtime encoder:", "",
              "| view | ONNX vs torch, max relative error | padding invariance, max abs diff |", "|---|---:|---:|"]  # fmt: skip
    for n in spec.views:
        lines.append(f"| `{n}` | {checks['parity_max_rel_err'][n]:.2e} | {checks['padding_max_abs_diff'][n]:.2e} |")
    if spec.decoder is not None and "decoder" in checks:
        d, c = spec.decoder, checks["decoder"]
        lines += ["", f"Decoders (`{d.file}`: {d.description}; tasks {', '.join(d.tasks)}): a greedy decode of each task from "
                  f"{c['greedy_decodes_equal'] // len(d.tasks)} corpus sentences' vectors picks the same words in ONNX Runtime as in "
                  f"torch; logits relative error {c['step_max_rel_err']:.2e} at the first step, {c['decode_max_rel_err']:.2e} at any step."]  # fmt: skip
    lines += ["", "## Nearest neighbours", "",
              f"Like the skip-thought paper's Table 2: each query is a random corpus sentence; its neighbour is the most "
              f"cosine-similar other sentence among {sample:,} random corpus sentences, encoded by this bundle's ONNX graph.", ""]  # fmt: skip
    views = [spec.default_view] + [v for v in spec.views if v != spec.default_view and spec.views[v].pooling != "supervised"][:2]
    for view, rows in neighbour_examples(encoder, corpus, sample, views).items():
        lines += [f"View `{view}`:", "", "| query | nearest sentence | cosine |", "|---|---|---:|"]
        for q, nb, s in rows:
            lines.append(f"| {q.replace('|', '/')} | {nb.replace('|', '/')} | {s:.3f} |")
        lines.append("")
    size = sum(f.stat().st_size for f in bundle.path.iterdir() if f.is_file())
    lines += ["## Files", "", f"{size / 1e6:.1f} MB on disk: " + ", ".join(sorted(f.name for f in bundle.path.iterdir())) + ".", ""]
    lines += ["Regenerate with `thoughtvec export` (see the docs' Training page); this card is generated, do not edit it by hand.", ""]
    atomic_write_text(bundle.path / "MODEL_CARD.md", "\n".join(lines))
