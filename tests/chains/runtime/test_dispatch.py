from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from chains.cluster import plan_crawl
from chains.runtime.context import Runtime
from chains.runtime.dispatch import (
    FRONTIER_UNITS,
    Outbox,
    Publisher,
    Recorder,
    message_priority,
)
from chains.runtime.launch import launch
from chains.runtime.model import Chain, Link, Step
from chains.runtime.model import Chain as Routes
from chains.runtime.units import Unit, by_depth, children, make_unit, unit_id

CHAIN = Chain(
    name="c", start="list",
    steps={"list": Step(task="s.p.list"), "item": Step(task="s.p.item", priority=5)},
    links=[Link(src="list", records="rows", dst="item", map={"item_id": "id"})],
)


def test_unit_ids_depend_on_step_and_params_only() -> None:
    assert unit_id("item", {"a": 1, "b": 2}) == unit_id("item", {"b": 2, "a": 1})
    assert unit_id("item", {"a": 1}) != unit_id("list", {"a": 1})
    assert unit_id("item", {"a": 1}) != unit_id("item", {"a": 2})


def test_children_map_fields_and_collapse_duplicates() -> None:
    rows: list[dict[str, Any]] = [{"id": "x", "other": 1}, {"id": "y"}, {"id": "x", "other": 2}]
    kids = children(CHAIN, "list", {"rows": rows}, next_page={"page": 2})
    assert [u["params"] for u in kids["item"]] == [{"item_id": "x"}, {"item_id": "y"}]
    assert kids["list"] == [make_unit("list", {"page": 2}, page=1)]
    assert [u["page"] for u in kids["item"]] == [0, 0]


def test_records_of_other_names_do_not_fan_out() -> None:
    assert children(CHAIN, "list", {"other": [{"id": "x"}]}, next_page=None) == {}


def test_deeper_units_run_first_on_both_brokers() -> None:
    step = CHAIN.steps["item"]
    # RabbitMQ serves the highest number first, Redis the lowest.
    assert message_priority("amqp", step, 4) > message_priority("amqp", step, 0)
    assert message_priority("redis", step, 4) < message_priority("redis", step, 0)


def test_a_next_page_keeps_its_lists_depth_and_a_linked_child_goes_deeper() -> None:
    kids = children(CHAIN, "list", {"rows": [{"id": "x"}]}, next_page={"page": 2})
    grouped = by_depth("list", 3, kids)
    assert [u["params"] for u in grouped[3]["list"]] == [{"page": 2}]
    assert [u["params"] for u in grouped[4]["item"]] == [{"item_id": "x"}]


def test_a_message_running_its_list_on_holds_its_next_page_and_sends_only_full_messages(
        ) -> None:
    sent: list[tuple[str, list[str]]] = []

    class Recording(Publisher):
        """Registers nothing (every unit is new) and records what would be sent."""

        def __init__(self) -> None:
            pass

        def register(self, job_id: str, units_by_step: Mapping[str, Iterable[Unit]],
                     depth: int) -> set[str]:
            return {u["id"] for units in units_by_step.values() for u in units}

        def publish(self, chain: Routes, job_id: str, step: str, units: list[Unit],
                    depth: int, countdown: float | None = None,
                    size: int | None = None) -> None:
            size = chain.steps[step].batch_size
            sent.extend((step, [u["params"]["item_id"] for u in units[i:i + size]])
                        for i in range(0, len(units), size))

    chain = CHAIN.model_copy(update={"steps": {
        "list": Step(task="s.p.list", inline_next=5),
        "item": Step(task="s.p.item", batch_size=4)}})
    publisher, held = Recording(), Outbox()
    for page, ids in enumerate([["a", "b", "c"], ["d", "e", "f"]]):
        kids = children(chain, "list", {"rows": [{"id": i} for i in ids]},
                        next_page={"page": page + 2}, page=page)
        publisher.spawn(chain, "j", {"list": kids["list"]}, 0, False, held, "list")
        publisher.spawn(chain, "j", {"item": kids["item"]}, 1, False, held, "list")
    assert [u["params"] for u in held.pages] == [{"page": 2}, {"page": 3}]
    assert sent == [("item", ["a", "b", "c", "d"])]  # e, f wait for a full message
    assert [u["params"]["item_id"] for u in held.waiting[("item", 1)]] == ["e", "f"]
    publisher.flush(chain, "j", held)
    assert sent[1:] == [("item", ["e", "f"])] and held.waiting == {}


def test_what_a_same_depth_step_spawns_stays_at_its_depth() -> None:
    """A sitemap is no hop: the pages it lists are as deep as the sitemap."""
    kids = {"page": [make_unit("page", {"url": "a"})],
            "sitemap": [make_unit("sitemap", {"url": "s"})]}
    assert set(by_depth("sitemap", 0, kids, hop=0)) == {0}
    assert set(by_depth("sitemap", 0, kids)) == {1}


def test_a_step_sends_ten_units_a_message_unless_it_says_otherwise() -> None:
    recorder = Recorder()
    units = [make_unit("item", {"item_id": str(i)}) for i in range(25)]
    Publisher(recorder, None).publish(CHAIN, "j", "item", units, 1)  # type: ignore[arg-type]
    assert [len(m.units) for m in recorder.sent] == [10, 10, 5]


def test_a_big_frontier_goes_in_bigger_messages_and_a_small_one_at_the_batch_size(
        runtime: Runtime) -> None:
    """1,000 root units of one step or more: messages of LAUNCH_FRONTIER_BATCH_SIZE (64)."""
    chain = plan_crawl(["http://127.0.0.1:9/"], max_depth=0).chain
    recorder = runtime.dispatch
    assert isinstance(recorder, Recorder)
    many = [f"http://127.0.0.1:9/p/{n}" for n in range(FRONTIER_UNITS + 10)]
    launch(chain, {"url": many[0]}, runtime,
           roots={"page": [{"url": u} for u in many[1:]]}, settings={"crawl": {}})
    sizes = sorted({len(m.units) for m in recorder.sent if m.envelope["step"] == "page"})
    assert max(sizes) == runtime.settings.launch.frontier_batch_size == 64
    recorder.sent.clear()
    few = [f"http://127.0.0.1:9/q/{n}" for n in range(40)]
    launch(chain, {"url": few[0]}, runtime, roots={"page": [{"url": u} for u in few[1:]]},
           settings={"crawl": {}})
    assert max(len(m.units) for m in recorder.sent) == chain.steps["page"].batch_size == 8
