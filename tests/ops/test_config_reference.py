"""docs/configuration.md is generated from the settings models, and says when it is stale."""

from __future__ import annotations

import re
import subprocess
import types
from pathlib import Path

import pytest
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

import config
from ops.config_reference import FIX, HIDDEN, OTHER, OUT, main, reference, stale
from sites.demo.accounts import DemoAccounts

ROOT = Path(__file__).resolve().parents[2]


def models_of(module: types.ModuleType) -> list[type[BaseSettings]]:
    return [m for m in vars(module).values() if isinstance(m, type)
            and issubclass(m, BaseSettings) and m.__module__ == module.__name__]


def module_of(*models: type[BaseSettings], imported: type[BaseSettings] | None = None,
              ) -> types.ModuleType:
    """A module that defines ``models`` (and imports ``imported``), as config.py does."""
    module = types.ModuleType(f"{__name__}.fake_config", "Settings of a test.")
    for model in models:
        model.__module__ = module.__name__
        setattr(module, model.__name__, model)
    if imported is not None:
        setattr(module, imported.__name__, imported)
    return module


def test_the_committed_reference_is_what_the_models_say() -> None:
    found = stale(OUT.read_text(), reference())
    assert not found, f"docs/configuration.md is stale: {', '.join(found)}; {FIX}"


def test_every_setting_of_every_settings_model_is_in_the_reference() -> None:
    committed = OUT.read_text()
    models = models_of(config)
    assert len(models) >= 15
    for model in models:
        prefix = str(model.model_config.get("env_prefix", ""))
        for name in model.model_fields:
            variable = (prefix + name).upper()
            assert f"| `{variable}` |" in committed, f"{variable} missing; {FIX}"


def test_every_setting_says_what_it_means() -> None:
    for model in models_of(config):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no description"


def test_a_new_model_is_found_by_introspection_and_an_imported_one_is_not() -> None:
    class CacheSettings(BaseSettings):
        """Where the page cache lives."""

        model_config = SettingsConfigDict(env_prefix="CACHE_")
        size_mb: int = Field(64, ge=1, description="Megabytes kept in memory.")

    text = reference(module_of(CacheSettings, imported=config.TaskSettings))
    assert "## CacheSettings" in text and "Where the page cache lives." in text
    assert "| `CACHE_SIZE_MB` | int >= 1 | `64` | Megabytes kept in memory. |" in text
    assert "TASK_MAX_RETRIES" not in text


def test_a_secrets_default_is_never_printed() -> None:
    class VaultSettings(BaseSettings):
        """Credentials."""

        model_config = SettingsConfigDict(env_prefix="VAULT_")
        api_token: str = Field("tok-7f3a", description="The API's bearer token.")
        key: SecretStr = Field(SecretStr("sk-91b2"), description="A signing key.")
        url: str = Field("redis://:pw-4c1d@cache.lan:6379/0", description="Where it is.")

    class Accounts(DemoAccounts):  # the demo's real model: passwords by default
        """The demo site's accounts."""

    text = reference(module_of(VaultSettings, Accounts))
    for secret in ("tok-7f3a", "sk-91b2", "pw-4c1d", "pw-reader1"):
        assert secret not in text
    assert f"| `VAULT_API_TOKEN` | str | {HIDDEN} |" in text
    assert f"| `DEMO_ACCOUNTS` | JSON object of str | {HIDDEN} |" in text


def test_defaults_under_the_checkout_are_shown_under_crawlchain_home() -> None:
    text = reference()
    assert str(config.HOME) not in text
    assert "| `STATE_REDIS_URL` | str | `unix://$CRAWLCHAIN_HOME/run/redis.sock` |" in text


def drop_row(text: str, variable: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True)
                   if not line.startswith(f"| `{variable}` |"))


def test_check_names_the_missing_variable_and_the_fix(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      ) -> None:
    out = tmp_path / "configuration.md"
    out.write_text(drop_row(reference(), "TASK_MAX_RETRIES"))
    assert main(["--check", "--out", str(out)]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert "TASK_MAX_RETRIES missing" in line and line.endswith(FIX)


def test_check_names_a_changed_row_and_a_variable_that_is_gone(tmp_path: Path) -> None:
    text = reference().replace("Transient failures retried this often", "Retries")
    text += "| `TASK_OLD_KNOB` | int | `1` | Gone. |\n"
    assert stale(text, reference()) == ["TASK_MAX_RETRIES changed",
                                        "TASK_OLD_KNOB no longer a setting"]


def test_check_names_the_line_when_only_prose_differs() -> None:
    text = reference().replace("Where Celery messages go", "Where messages go")
    [found] = stale(text, reference())
    assert re.fullmatch(r"the text around the tables differs from line \d+", found)


def test_the_docs_verb_writes_the_reference_and_checks_it(tmp_path: Path) -> None:
    out = tmp_path / "configuration.md"
    assert main(["--out", str(out)]) == 0
    assert out.read_text() == reference()
    done = subprocess.run([str(ROOT / "control.sh"), "docs", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_every_variable_read_outside_the_models_is_read_by_the_code() -> None:
    listed = subprocess.run(["git", "ls-files", "*.py", "control.sh", "docker-compose.yml"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    code = "\n".join((ROOT / name).read_text(errors="replace") for name in listed.split()
                     if name not in ("ops/config_reference.py",)
                     and not name.startswith("tests/ops/"))
    for name, _, _ in OTHER:
        if "<" not in name:
            assert name in code, f"{name} is documented but nothing reads it"
