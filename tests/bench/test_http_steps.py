"""bench/http_steps.py drives each step's ASGI callable and the app as served; here, that every row is a 200 answer
(a step answered otherwise stops the tool) and that the table has each row. No timing is checked."""

import asyncio
import sys

from thoughtvec.bench import http_steps


def test_every_step_and_the_served_app_answer_and_are_printed(models_dir, monkeypatch, capsys):
    argv = ["http_steps", "--bundle", str(models_dir / "tiny"), "--requests", "5", "--rounds", "1"]
    monkeypatch.setattr(sys, "argv", argv)
    asyncio.run(http_steps.main())
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and not line.startswith("| what")]
    assert len(rows) == 5 and rows[-1].startswith("| the app as served (`tiny`)")
    assert all(float(row.rsplit("|", 2)[1]) > 0 for row in rows)
