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

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


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


def code_blocks(language: str) -> list[str]:
    parts = README.split("```")
    return [part.removeprefix(language).strip("\n") for part in parts[1::2]
            if part.startswith(language + "\n")]


def test_the_readmes_step_example_is_a_real_steps_code() -> None:
    source = (ROOT / "sites" / "forum" / "__init__.py").read_text()
    examples = [block for block in code_blocks("python") if "@step(" in block
                or "(Item, collection=" in block]
    assert len(examples) >= 2
    for block in examples:
        assert block in source, block


def test_every_crawlchain_subcommand_is_in_the_command_table() -> None:
    from chains.commands import commands

    for name in commands():
        assert f"`crawlchain {name}" in README, name
