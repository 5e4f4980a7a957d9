"""The README documents what the code reads."""

from __future__ import annotations

from pathlib import Path

from config import (
    BrokerSettings,
    DedupSettings,
    FetchSettings,
    PolitenessSettings,
    ProxySettings,
    ResourceSettings,
    ReviveSettings,
    StateSettings,
    StorageSettings,
    TaskSettings,
)

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_the_two_commands_come_first() -> None:
    first_block = README.split("```")[1]
    assert "./control.sh demo" in first_block and "./control.sh test" in first_block


def test_every_setting_is_in_the_config_table() -> None:
    for model in (BrokerSettings, StateSettings, StorageSettings, DedupSettings, TaskSettings,
                  FetchSettings, ResourceSettings, ProxySettings, ReviveSettings,
                  PolitenessSettings):
        prefix = str(model.model_config.get("env_prefix", ""))
        for name in model.model_fields:
            assert f"`{(prefix + name).upper()}`" in README, name
