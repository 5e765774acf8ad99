"""Settings: environment and flags, comma lists, typos are errors, one table."""

from __future__ import annotations

import argparse

import pytest
from pydantic import ValidationError

from thoughtvec.service.settings import Settings, add_cli_flags, check_environment, load_settings, overrides_from_args, settings_table


def test_environment_and_lists(monkeypatch):
    monkeypatch.setenv("THOUGHTVEC_MAX_BATCH_SIZE", "16")
    monkeypatch.setenv("THOUGHTVEC_API_KEYS", "a, b")
    monkeypatch.setenv("THOUGHTVEC_WARMUP", "false")
    s = load_settings()
    assert s.max_batch_size == 16 and s.api_keys == ["a", "b"] and s.warmup is False
    assert load_settings(max_batch_size="4").max_batch_size == 4  # flags win over the environment


def test_variables_of_the_training_commands_are_not_typos(monkeypatch):
    """README documents THOUGHTVEC_SENTEVAL / THOUGHTVEC_CACHE for training; `serve` must not take them for misspelt settings."""
    monkeypatch.setenv("THOUGHTVEC_SENTEVAL", "/data/senteval")
    monkeypatch.setenv("THOUGHTVEC_CACHE", "/tmp/cache")
    assert load_settings().port == 8000


def test_typos_are_errors(monkeypatch):
    with pytest.raises(ValueError, match="THOUGHTVEC_MAX_BACH_SIZE"):
        check_environment({"THOUGHTVEC_MAX_BACH_SIZE": "3", "PATH": "/bin"})
    with pytest.raises(ValidationError, match="max_bach_size"):
        Settings(max_bach_size=3)
    with pytest.raises(ValidationError, match="max_queue_size"):
        Settings(max_batch_size=64, max_queue_size=8)
    with pytest.raises(ValidationError, match="truncation"):
        Settings(truncation="sometimes")


def test_every_setting_is_a_flag_and_a_table_row():
    parser = argparse.ArgumentParser()
    add_cli_flags(parser)
    args = parser.parse_args(["--max-batch-size", "8", "--no-warmup", "--cors-origins", "http://a,http://b"])
    over = overrides_from_args(args)
    assert over == {"max_batch_size": "8", "warmup": False, "cors_origins": "http://a,http://b"}
    s = Settings(**over)
    assert s.max_batch_size == 8 and s.cors_origins == ["http://a", "http://b"]
    table = settings_table()
    for name in Settings.model_fields:
        assert f"`THOUGHTVEC_{name.upper()}`" in table and f"`--{name.replace('_', '-')}`" in table
    assert "| `--no-build-default-index` / `--build-default-index` | `true` |" in table  # as typed to change it
    assert "| `--ort-spinning` / `--no-ort-spinning` | `false` |" in table
    with pytest.raises(SystemExit):
        parser.parse_args(["--max-bach-size", "8"])
