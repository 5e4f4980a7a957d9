"""The job API against a real server and a real redis-server, without workers: a launched
job stays queued, so each verb's effect on the ledger is seen exactly."""

from __future__ import annotations

import csv
import io
import json

from sandbox.forum.world import ForumWorld
from sites.forum import User
from tests.api.conftest import Served


def launch(served: Served, **body: object) -> str:
    answer = served.session().post(served.url + "/api/jobs", json=body)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["job_id"])


def test_a_launch_answers_a_job_id_that_the_list_and_the_summary_know(served: Served) -> None:
    api = served.session()
    job_id = launch(served, chain="demo", params={"page": 1},
                    settings={"base_url": "http://127.0.0.1:9/"})
    listed = api.get(served.url + "/api/jobs").json()
    assert job_id in [row["job_id"] for row in listed]
    summary = api.get(f"{served.url}/api/jobs/{job_id}").json()
    assert summary["state"] == "running" and summary["chain"] == "demo"
    assert summary["params"] == {"page": 1}
    assert summary["steps"]["feed"]["spawned"] == 1 and summary["pending"] == 1
    assert {"progress", "throughput", "failure_groups", "failures"} <= set(summary)


def test_pause_resume_cancel_and_retry_change_the_jobs_state(served: Served) -> None:
    api, job_id = served.session(), launch(served, chain="demo")
    base = f"{served.url}/api/jobs/{job_id}"
    paused = api.post(base + "/pause").json()
    assert paused == {"job_id": job_id, "state": "paused", "units": 0}
    resumed = api.post(base + "/resume").json()
    assert resumed["state"] == "running" and resumed["units"] == 0  # nothing was parked
    retried = api.post(base + "/retry", json={"error": "NotFound"}).json()
    assert retried["state"] == "running" and retried["units"] == 0  # nothing failed
    cancelled = api.post(base + "/cancel").json()
    assert cancelled == {"job_id": job_id, "state": "cancelled", "units": 1}
    summary = api.get(base).json()
    assert summary["steps"]["feed"]["cancelled"] == 1 and summary["pending"] == 0


def test_a_verb_the_jobs_state_refuses_is_a_409_saying_why(served: Served) -> None:
    api, job_id = served.session(), launch(served, chain="demo")
    api.post(f"{served.url}/api/jobs/{job_id}/cancel")
    answer = api.post(f"{served.url}/api/jobs/{job_id}/resume")
    assert answer.status_code == 409
    assert answer.json()["detail"] == f"job {job_id} is cancelled, not paused: nothing to resume"
    assert api.post(f"{served.url}/api/jobs/{job_id}/retry").status_code == 409


def test_an_unknown_job_is_a_404_naming_it(served: Served) -> None:
    for path in ("", "/throughput", "/items"):
        answer = served.session().get(f"{served.url}/api/jobs/nosuchjob{path}")
        assert answer.status_code == 404, path
        assert "job nosuchjob is unknown" in answer.json()["detail"]


def refused(served: Served, body: dict[str, object]) -> dict[str, object]:
    answer = served.session().post(served.url + "/api/jobs", json=body)
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert len(detail) >= 1
    return dict(detail[0])


def test_a_bad_launch_is_a_422_whose_body_names_the_field(served: Served) -> None:
    unknown = refused(served, {"chain": "frum"})
    assert unknown["loc"] == ["body", "chain"] and "no chain named 'frum'" in str(unknown["msg"])
    assert "forum" in str(unknown["msg"])  # the known ones are listed
    typed = refused(served, {"chain": "demo", "params": {"page": "abc"}})
    assert typed["loc"] == ["body", "params", "page"]
    assert "'abc'" in str(typed["msg"])
    assert refused(served, {"chain": "demo", "params": {"pag": 1}})["loc"] == \
        ["body", "params", "pag"]
    assert refused(served, {"chain": "demo", "settings": {"bse_url": "x"}})["loc"] == \
        ["body", "settings", "bse_url"]
    assert refused(served, {"chain": "demo", "settings": {"http_cache": "sometimes"}})["loc"] \
        == ["body", "settings", "http_cache"]
    assert refused(served, {"params": {}})["loc"] == ["body", "chain"]  # FastAPI's own
    assert refused(served, {"chain": "crawl"})["loc"] == ["body", "crawl", "start"]


def test_nothing_is_queued_by_a_refused_launch(served: Served) -> None:
    def jobs() -> list[str]:
        rows = served.session().get(served.url + "/api/jobs?limit=1000").json()
        return [row["job_id"] for row in rows]

    before = jobs()
    refused(served, {"chain": "demo", "params": {"page": 0}})
    assert jobs() == before


def store_users(served: Served, job_id: str, count: int) -> list[User]:
    world = ForumWorld.build(seed=7)
    users = [User(user_id=u.id, name=u.name, joined="2020-01-01", reputation=u.reputation)
             for u in list(world.users.values())[:count]]
    served.runtime.store.upsert(job_id, users)
    return users


def test_a_jobs_items_stream_as_json_lines_and_as_csv(served: Served) -> None:
    job_id = launch(served, chain="forum")
    users = store_users(served, job_id, 30)
    api = served.session()
    answer = api.get(f"{served.url}/api/jobs/{job_id}/items", params={"format": "jsonl"})
    assert answer.headers["content-type"].startswith("application/x-ndjson")
    records = [json.loads(line) for line in answer.text.splitlines()]
    assert sorted(r["data"]["user_id"] for r in records) == sorted(u.user_id for u in users)
    assert {r["job_id"] for r in records} == {job_id}
    table = api.get(f"{served.url}/api/jobs/{job_id}/items",
                    params={"format": "csv", "collection": "users", "fields": "name,user_id"})
    rows = list(csv.DictReader(io.StringIO(table.text)))
    assert len(rows) == 30 and list(rows[0])[-2:] == ["name", "user_id"]


def test_a_job_without_items_streams_an_empty_export(served: Served) -> None:
    job_id = launch(served, chain="demo")
    answer = served.session().get(f"{served.url}/api/jobs/{job_id}/items")
    assert answer.status_code == 200 and answer.text == ""


def test_the_throughput_covers_the_jobs_life_in_buckets(served: Served) -> None:
    job_id = launch(served, chain="demo")
    speed = served.session().get(f"{served.url}/api/jobs/{job_id}/throughput").json()
    assert speed["bucket_s"] == 5 and len(speed["points"]) >= 1
    assert {p["units_per_s"] for p in speed["points"]} == {0.0}  # nothing ran yet
