"""The HTTP sink beyond the contract: idempotency keys, bounds, rejections, write-only sinks."""

from __future__ import annotations

import logging
import socket
import time
import traceback
from typing import Any

import pytest

from exceptions import ClientError, StorageUnavailable
from external_interface.storage.http_sink import HttpSinkStore, batch_key
from tests.external_interface.storage.support import SinkHTTPServer, posts
from utils.logs import RedactSecrets


def _sink(url: str, **options: Any) -> HttpSinkStore:
    """A sink client with millisecond backoff unless a test says otherwise."""
    return HttpSinkStore(url, **({"backoff_s": 0.01, "backoff_max_s": 0.05} | options))


def test_the_batch_key_ignores_item_order() -> None:
    assert batch_key("job-1", posts(1, 2, 3)) == batch_key("job-1", posts(3, 1, 2))


def test_the_batch_key_changes_with_the_job_or_the_data() -> None:
    key = batch_key("job-1", posts(1))
    assert batch_key("job-2", posts(1)) != key
    assert batch_key("job-1", posts(1, title="changed")) != key


def test_a_batch_sent_twice_carries_one_key_and_is_stored_once(
    sink_server: SinkHTTPServer,
) -> None:
    store = _sink(sink_server.url)
    store.upsert("job-1", posts(1, 2))
    [first] = [r for r in store.read("posts") if r["key"] == "demo|1"]
    store.upsert("job-1", posts(2, 1))
    received = sink_server.sink.posts_received
    assert len(received) == 2 and received[0] == received[1]
    assert len(sink_server.sink.batches_stored) == 1
    assert [r for r in store.read("posts") if r["key"] == "demo|1"] == [first]


def test_a_refused_connection_raises_storage_unavailable() -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = _sink(f"http://127.0.0.1:{port}/items", attempts=2)
    with pytest.raises(StorageUnavailable, match="ConnectionError"):
        store.upsert("job-1", posts(1))


def test_a_rejected_batch_is_a_client_error_and_is_not_retried(
    sink_server: SinkHTTPServer,
) -> None:
    sink_server.sink.fail_always = 422
    with pytest.raises(ClientError) as raised:
        _sink(sink_server.url).upsert("job-1", posts(1))
    assert raised.value.status == 422
    assert len(sink_server.sink.posts_received) == 1


@pytest.mark.parametrize("status", [422, 501, 505])
def test_a_status_no_retry_can_change_is_not_retried(
    sink_server: SinkHTTPServer, status: int,
) -> None:
    sink_server.sink.fail_always = status
    with pytest.raises(ClientError):
        _sink(sink_server.url).upsert("job-1", posts(1))
    assert len(sink_server.sink.posts_received) == 1


@pytest.mark.parametrize("status", [408, 425, 429, 502, 503])
def test_a_transient_status_is_retried(sink_server: SinkHTTPServer, status: int) -> None:
    sink_server.sink.fail_with = [status]
    _sink(sink_server.url).upsert("job-1", posts(1))
    assert len(sink_server.sink.posts_received) == 2


def test_retry_after_is_honoured(sink_server: SinkHTTPServer) -> None:
    sink_server.sink.fail_with = [503]
    sink_server.sink.retry_after = "0.3"
    started = time.monotonic()
    _sink(sink_server.url, backoff_max_s=1.0).upsert("job-1", posts(1))
    assert time.monotonic() - started >= 0.3


def test_retries_stop_at_the_deadline_whatever_the_attempts(sink_server: SinkHTTPServer) -> None:
    sink_server.sink.fail_always = 503
    store = _sink(sink_server.url, attempts=1000, backoff_s=0.1, backoff_max_s=0.1, deadline_s=0.5)
    started = time.monotonic()
    with pytest.raises(StorageUnavailable, match="gave up after"):
        store.upsert("job-1", posts(1))
    assert time.monotonic() - started < 1.5
    assert len(sink_server.sink.posts_received) < 20


def test_a_write_only_sink_says_so_on_read(sink_server: SinkHTTPServer) -> None:
    sink_server.sink.readable = False
    store = _sink(sink_server.url)
    store.upsert("job-1", posts(1))
    with pytest.raises(TypeError, match="write-only"):
        store.count("posts")


# -- secrets ---------------------------------------------------------------------------
SECRET = "tok3n-hunter2"


def _with_credentials(url: str) -> str:
    return url.replace("http://", f"http://crawler:{SECRET}@") + f"?access_token={SECRET}"


@pytest.fixture
def caplog(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Records as a worker's handlers write them: through ``RedactSecrets``, since
    urllib3 logs every request target, query included, at DEBUG."""
    caplog.handler.addFilter(RedactSecrets())
    caplog.set_level(logging.DEBUG)
    return caplog


def _shown(error: BaseException, caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join([str(error), repr(error), str(getattr(error, "url", "")), caplog.text,
                      *traceback.format_exception(error)])


def test_a_refused_connection_never_shows_the_sinks_token(
        caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = _sink(_with_credentials(f"http://127.0.0.1:{port}/items"), attempts=2)
    for call in (lambda: store.upsert("job-1", posts(1)), lambda: store.count("posts"),
                 store.collections):
        with pytest.raises((StorageUnavailable, TypeError)) as caught:
            call()
        assert SECRET not in _shown(caught.value, caplog)
        assert "crawler:***@127.0.0.1" in str(caught.value)


@pytest.mark.parametrize("status", [422, 503])
def test_a_failing_sink_never_shows_its_token(
        sink_server: SinkHTTPServer, caplog: pytest.LogCaptureFixture, status: int) -> None:
    sink_server.sink.fail_always = status
    with pytest.raises((ClientError, StorageUnavailable)) as caught:
        _sink(_with_credentials(sink_server.url), attempts=2).upsert("job-1", posts(1))
    assert SECRET not in _shown(caught.value, caplog)
    assert caught.value.status == status


def test_a_write_only_sink_with_a_token_says_so_without_it(sink_server: SinkHTTPServer) -> None:
    sink_server.sink.readable = False
    with pytest.raises(TypeError, match="write-only") as caught:
        _sink(_with_credentials(sink_server.url)).count("posts")
    assert SECRET not in str(caught.value)
