"""Chains, steps, workers and queues, sites, health and the schema, over HTTP."""

from __future__ import annotations

from chains.runtime.launch import worker_queues
from chains.runtime.registry import chains as all_chains
from chains.runtime.registry import steps
from tests.api.conftest import Served


def test_every_declared_chain_is_listed_with_its_start_params_schema(served: Served) -> None:
    chains = {c["name"]: c for c in served.session().get(served.url + "/api/chains").json()}
    assert set(chains) == set(all_chains())
    demo = chains["demo"]
    assert demo["start"] == "feed" and demo["steps"]["feed"]["task"] == "demo.h5.feed"
    assert demo["start_input"]["properties"]["page"]["minimum"] == 1
    one = served.session().get(served.url + "/api/chains/forum").json()
    assert one["links"][0]["src"] == "boards"
    missing = served.session().get(served.url + "/api/chains/frum")
    assert missing.status_code == 422 and missing.json()["detail"][0]["loc"][-1] == "chain"


def test_every_step_is_listed_with_its_input_model(served: Served) -> None:
    listed = {s["name"]: s for s in served.session().get(served.url + "/api/steps").json()}
    assert set(listed) == set(steps())
    user = listed["forum.api.user"]
    assert user["site"] == "forum" and user["items"] == ["users"]
    assert "author_id" in user["input"]["properties"]


def test_with_no_worker_every_queue_a_launch_uses_is_flagged_unconsumed(
        served: Served) -> None:
    view = served.session().get(served.url + "/api/workers").json()
    assert view["workers"] == {}
    assert set(worker_queues()) <= set(view["queues"])
    for name in worker_queues():
        assert view["queues"][name]["unconsumed"] is True, name
        assert view["queues"][name]["consumers"] == []


def test_the_sites_view_is_a_list_of_sites(served: Served) -> None:
    assert served.session().get(served.url + "/api/sites").json() == []


def test_health_says_the_state_redis_answers(served: Served) -> None:
    assert served.session().get(served.url + "/api/health").json() == {"ok": True}


def test_the_openapi_schema_comes_from_the_models_and_names_the_token(served: Served) -> None:
    schema = served.session().get(served.url + "/api/openapi.json").json()
    assert {"/api/jobs", "/api/jobs/{job_id}/cancel", "/api/jobs/{job_id}/items",
            "/api/workers"} <= set(schema["paths"])
    assert not any(path.startswith("/console") for path in schema["paths"])
    launch = schema["components"]["schemas"]["LaunchRequest"]
    assert launch["required"] == ["chain"] and "settings" in launch["properties"]
    assert schema["components"]["securitySchemes"]["token"]["scheme"] == "bearer"
    assert schema["security"] == [{"token": []}]
