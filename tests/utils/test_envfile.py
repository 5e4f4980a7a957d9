"""The cluster's env file: found, mode-checked, read, exported without printing secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from utils.envfile import CHECKOUT, EnvFileError, locate, read, shell_exports

SECRET = "s3cr3t-pw"


def env_file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "crawlchain.env"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_an_empty_crawlchain_env_file_means_no_file() -> None:
    assert locate({"CRAWLCHAIN_ENV_FILE": ""}) is None


def test_the_default_is_crawlchain_env_in_the_checkout_only_when_it_exists() -> None:
    default = CHECKOUT / "crawlchain.env"
    assert locate({}) == (default if default.exists() else None)


def test_a_named_file_that_does_not_exist_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(EnvFileError, match=f"{tmp_path}/nope.env does not exist"):
        locate({"CRAWLCHAIN_ENV_FILE": str(tmp_path / "nope.env")})


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o660, 0o644])
def test_a_file_group_or_others_can_access_is_refused_with_the_fix(
        tmp_path: Path, mode: int) -> None:
    path = env_file(tmp_path, f"CELERY_BROKER_URL=amqp://u:{SECRET}@h//\n", mode)
    with pytest.raises(EnvFileError) as refused:
        read(path)
    message = str(refused.value)
    assert str(path) in message and f"chmod 600 {path}" in message
    assert SECRET not in message


def test_values_are_read_with_dotenv_quoting(tmp_path: Path) -> None:
    path = env_file(tmp_path, "# cluster\nA=1\nexport B='two words'\nC=\"x#y\"\n")
    assert read(path) == {"A": "1", "B": "two words", "C": "x#y"}


def test_a_key_without_value_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(EnvFileError, match="STATE_REDIS_URL has no value"):
        read(env_file(tmp_path, "STATE_REDIS_URL\n"))


def test_exports_skip_what_the_environment_already_sets_and_quote_the_rest() -> None:
    out = shell_exports({"A": "it's $HOME `x`", "B": "file"}, {"B": "env"})
    assert out == "export A='it'\"'\"'s $HOME `x`'\n"


def test_per_host_paths_are_refused_in_the_shared_file(tmp_path: Path) -> None:
    with pytest.raises(EnvFileError, match="CRAWLCHAIN_HOME belongs to each host"):
        read(env_file(tmp_path, "CRAWLCHAIN_HOME=/srv/x\n"))
