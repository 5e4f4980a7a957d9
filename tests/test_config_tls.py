"""TLS and the API's settings: what a rediss:// or amqps:// link is given, and defaults
that stay safe (the server certificate always checked, the API on loopback)."""

from __future__ import annotations

import ssl
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import redis

from config import AmqpTLSSettings, ApiSettings, BrowserSettings, RedisTLSSettings, Settings
from worker import make_app


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    for name in ("ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_text("not read here\n")
    return {name: str(tmp_path / name) for name in ("ca.pem", "client.pem", "client.key")}


def tls_env(monkeypatch: pytest.MonkeyPatch, prefix: str, files: dict[str, str]) -> None:
    monkeypatch.setenv(f"{prefix}CA_FILE", files["ca.pem"])
    monkeypatch.setenv(f"{prefix}CERT_FILE", files["client.pem"])
    monkeypatch.setenv(f"{prefix}KEY_FILE", files["client.key"])


def test_a_rediss_state_url_carries_the_files_and_always_checks_the_server(
        monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> None:
    tls_env(monkeypatch, "REDIS_TLS_", files)
    monkeypatch.setenv("STATE_REDIS_URL", "rediss://:pw@redis.internal:6380/0")
    url = Settings().state.redis_url
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert query == {"ssl_ca_certs": files["ca.pem"], "ssl_certfile": files["client.pem"],
                     "ssl_keyfile": files["client.key"], "ssl_cert_reqs": "required",
                     "ssl_check_hostname": "true"}
    pool = redis.Redis.from_url(url).connection_pool  # as redis-py reads it: no connection
    assert pool.connection_class is redis.SSLConnection
    assert pool.connection_kwargs["ssl_ca_certs"] == files["ca.pem"]


def test_a_url_that_names_its_own_tls_parameter_keeps_it_and_plain_urls_stay_as_they_are(
        ) -> None:
    tls = RedisTLSSettings(ca_file="/etc/ca.pem")
    own = tls.url("rediss://h:6380/0?ssl_cert_reqs=optional")
    assert parse_qs(urlsplit(own).query)["ssl_cert_reqs"] == ["optional"]
    for plain in ("redis://h:6379/0", "unix:///run/redis.sock"):
        assert tls.url(plain) == plain


def test_a_rediss_broker_gets_the_files_as_broker_use_ssl(
        monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> None:
    tls_env(monkeypatch, "REDIS_TLS_", files)
    monkeypatch.setenv("CELERY_BROKER_URL", "rediss://:pw@redis.internal:6380/0")
    conf = make_app(Settings()).conf
    assert conf.broker_use_ssl == {"ssl_ca_certs": files["ca.pem"],
                                   "ssl_certfile": files["client.pem"],
                                   "ssl_keyfile": files["client.key"],
                                   "ssl_cert_reqs": ssl.CERT_REQUIRED,
                                   "ssl_check_hostname": True}
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://redis.internal:6379/0")
    assert not make_app(Settings()).conf.broker_use_ssl


def test_an_amqps_broker_checks_the_servers_certificate_and_its_name(
        monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> None:
    tls_env(monkeypatch, "AMQP_TLS_", files)
    monkeypatch.setenv("CELERY_BROKER_URL", "amqps://crawl:pw@rabbit.internal:5671//")
    assert make_app(Settings()).conf.broker_use_ssl == {
        "ca_certs": files["ca.pem"], "certfile": files["client.pem"],
        "keyfile": files["client.key"], "cert_reqs": ssl.CERT_REQUIRED,
        "server_hostname": None}  # kombu puts the URL's host there: the name is checked
    assert AmqpTLSSettings().options()["cert_reqs"] == ssl.CERT_REQUIRED  # with no files too


def test_a_tls_file_that_is_not_there_is_refused_by_name(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    monkeypatch.setenv("REDIS_TLS_CA_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(ValueError, match=r"REDIS_TLS_CA_FILE=.*missing\.pem: no such file"):
        Settings()


def test_a_client_certificate_without_its_key_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                          files: dict[str, str]) -> None:
    monkeypatch.setenv("AMQP_TLS_CERT_FILE", files["client.pem"])
    with pytest.raises(ValueError, match="AMQP_TLS_CERT_FILE and AMQP_TLS_KEY_FILE go together"):
        Settings()


def test_the_api_binds_loopback_unless_told_otherwise() -> None:
    settings = ApiSettings()
    assert (settings.host, settings.port, settings.token) == ("127.0.0.1", 8780, "")


def test_the_browser_is_the_named_executable_or_none(tmp_path: Path) -> None:
    assert BrowserSettings(executable=str(tmp_path / "nothing")).chromium() is None
    real = tmp_path / "chromium"
    real.write_text("#!/bin/sh\n")
    assert BrowserSettings(executable=str(real)).chromium() == str(real)
