"""A sampled stack lands in the phase the lead would look for it in: pydantic inside the
store is storage, inside a step it is validation; Celery inside the publisher is
publish, Celery alone is message and broker; the table shares out the CPU measured."""

from __future__ import annotations

from bench.chain_profile import phase_of, read_raw, summarize

MAIN = 'process 10:"python -m celery -A worker worker"'
CHILD = 'process 11:"python -m celery -A worker worker"'
TASK = f"{MAIN};{CHILD};run_units (base_task.py:50)"
RAW = [
    f"{TASK};save (chains/runtime/pipeline/save.py:30);"
    "upsert (external_interface/storage/sqlite.py:70);model_dump_json (pydantic/main.py:400) 30",
    f"{TASK};parse (chains/runtime/pipeline/parse.py:26);thread (sites/forum/__init__.py:80);"
    "__init__ (pydantic/main.py:210) 20",
    f"{TASK};parse (chains/runtime/pipeline/parse.py:26);thread (sites/forum/__init__.py:80);"
    "css (parsel/selector.py:600) 10",
    f"{TASK};spawn (chains/runtime/pipeline/spawn.py:30);"
    "publish (chains/runtime/dispatch.py:110);apply_async (celery/app/task.py:600) 15",
    f"{TASK};close (chains/runtime/pipeline/close.py:90);"
    "finish_many (chains/runtime/ledger.py:280);execute_command (redis/client.py:500) 10",
    f"{MAIN};{CHILD};_worker (concurrent/futures/thread.py:83);"
    "fetch_one (chains/runtime/pipeline/fetch.py:45);getresponse (http/client.py:1390) 10",
    f"{MAIN};on_readable (kombu/transport/redis.py:1200) 5",
]


def test_each_stack_goes_to_its_first_matching_phase() -> None:
    phases = [phase_of(frames) for frames, _ in read_raw(RAW)]
    assert phases == ["storage", "validation", "parse", "publish", "ledger", "fetch",
                      "message/broker"]
    assert phase_of(["<module> (somewhere.py:1)"]) == "other"


def test_the_table_gives_shares_and_cpu_per_page_and_item() -> None:
    table = summarize(RAW, pages=10, items=100, rate_hz=100, measured_cpu_s=1.25)

    assert table["samples"] == 100 and table["sampled_cpu_s"] == 1.0
    assert table["coverage"] == 0.8
    assert table["consumer_process_pct"] == 5.0
    storage = table["by_phase"]["storage"]
    # 30 % of the 1.25 CPU-s measured, over 10 pages and 100 items
    assert storage == {"share_pct": 30.0, "ms_per_page": 37.5, "us_per_item": 3750.0}
    assert sum(r["share_pct"] for r in table["by_phase"].values()) == 100.0
    assert next(iter(table["top_leaf_functions"])) == "model_dump_json (pydantic/main.py:400)"
