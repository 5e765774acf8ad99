"""Generated sections of a model card are replaced in place: writing one never drops another."""

from thoughtvec.training.evaluation.runner import _card_note
from thoughtvec.training.export.modelcard import set_card_section


def test_a_section_is_replaced_in_place_and_the_others_kept(tmp_path):
    card = tmp_path / "MODEL_CARD.md"
    card.write_text("# m\n\n## Views\n\nold views\n\n## Relatedness head\n\nold head\n\n## Post-processing\n\nthe table\n")
    set_card_section(card, "## Views", "new views")
    set_card_section(card, "## Extra", "appended")
    assert card.read_text() == (
        "# m\n\n## Views\n\nnew views\n\n## Relatedness head\n\nold head\n\n## Post-processing\n\nthe table\n\n## Extra\n\nappended\n"
    )


def test_saving_a_head_keeps_the_sections_after_it(tmp_path):
    (tmp_path / "MODEL_CARD.md").write_text("# m\n\n## Relatedness head\n\nold head\n\n## Post-processing\n\nthe table\n")
    _card_note(tmp_path, {"view": "uni-raw", "dev_pearson": 0.6, "test_pearson": 0.5})
    text = (tmp_path / "MODEL_CARD.md").read_text()
    assert "of view `uni-raw`" in text and "old head" not in text
    assert text.endswith("## Post-processing\n\nthe table\n")  # the eval's head note keeps what follows it


def test_an_unfinished_runs_card_reads_its_figures_from_the_training_log(tmp_path):
    """A checkpoint taken mid-run has no ``final`` summary; the card must not show nan or epoch 0."""
    import json

    from thoughtvec.training.export.modelcard import run_summary

    log = [
        {"step": 50, "epoch": 0.1, "loss": 3.0},
        {"step": 100, "epoch": 0.2, "loss": 2.0},
        {"step": 100, "eval": {"ns_loss": 2.5}},
        {"step": 150, "epoch": 0.3, "loss": 1.0},
    ]  # a step after the checkpoint: not counted
    (tmp_path / "train_log.jsonl").write_text("\n".join(json.dumps(e) for e in log))
    ck = {
        "variant": "v",
        "final": None,
        "progress": {"step": 100, "seconds": 7200.0, "tokens": 10},
        "train_config": {"out": str(tmp_path), "device": "cpu"},
        "corpus": {"tokens": 100},
    }
    s = run_summary(ck)
    assert s["epochs"] == 0.2 and s["final_loss"] == 2.5 and s["validation"] == {"ns_loss": 2.5}
    assert s["wall_time_s"] == 7200.0 and "unfinished" in s["device"]
    assert run_summary({**ck, "final": {"epochs": 1.0}}) == {"epochs": 1.0}
