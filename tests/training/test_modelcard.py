"""Generated sections of a model card are replaced in place: writing one never drops another."""

from training.evaluation.runner import _card_note
from training.modelcard import set_card_section


def test_a_section_is_replaced_in_place_and_the_others_kept(tmp_path):
    card = tmp_path / "MODEL_CARD.md"
    card.write_text("# m\n\n## Views\n\nold views\n\n## Relatedness head\n\nold head\n\n## Post-processing\n\nthe table\n")
    set_card_section(card, "## Views", "new views")
    set_card_section(card, "## Extra", "appended")
    assert card.read_text() == ("# m\n\n## Views\n\nnew views\n\n## Relatedness head\n\nold head\n\n"
                                "## Post-processing\n\nthe table\n\n## Extra\n\nappended\n")


def test_saving_a_head_keeps_the_sections_after_it(tmp_path):
    (tmp_path / "MODEL_CARD.md").write_text("# m\n\n## Relatedness head\n\nold head\n\n## Post-processing\n\nthe table\n")
    _card_note(tmp_path, {"view": "uni-raw", "dev_pearson": 0.6, "test_pearson": 0.5})
    text = (tmp_path / "MODEL_CARD.md").read_text()
    assert "of view `uni-raw`" in text and "old head" not in text
    assert text.endswith("## Post-processing\n\nthe table\n")  # the eval's head note used to cut everything after it
