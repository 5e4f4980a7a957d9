"""A user's item pipelines and observer for the forum, loaded by the workers from
``ITEM_PIPELINES`` and ``OBSERVERS`` as any cluster's own would be."""

from __future__ import annotations

import json
import os

from chains.api import DropItem, Item, ItemPipeline, JobEvent, Observer, UnitClosed, UnitContext
from sites.forum import Post, Reaction

OBSERVED = "FORUM_OBSERVED_FILE"  # where the observer appends what it hears


class WordCount(Post, collection="posts", key="post_id"):
    words: int


class Enrich(ItemPipeline):
    """Posts gain their word count."""

    def process_item(self, item: Item, unit: UnitContext) -> Item:
        if isinstance(item, Post):
            return WordCount(**item.model_dump(), words=len(item.body.split()))
        return item


class NoAnger(ItemPipeline):
    """Angry reactions are not kept."""

    def process_item(self, item: Item, unit: UnitContext) -> Item:
        if isinstance(item, Reaction) and item.kind == "angry":
            raise DropItem("angry reaction")
        return item


class Journal(Observer):
    """Appends one JSON line per event to the file ``FORUM_OBSERVED_FILE`` names."""

    def _write(self, **event: object) -> None:
        with open(os.environ[OBSERVED], "a") as out:
            out.write(json.dumps(event) + "\n")

    def job_started(self, job: JobEvent) -> None:
        self._write(event="job_started", job=job.job_id, chain=job.chain)

    def unit_done(self, unit: UnitClosed) -> None:
        self._write(event="unit_done", job=unit.job_id, step=unit.step, items=unit.items)

    def unit_failed(self, unit: UnitClosed) -> None:
        self._write(event="unit_failed", job=unit.job_id, url=unit.url, error=unit.error)

    def job_ended(self, job: JobEvent) -> None:
        self._write(event="job_ended", job=job.job_id, state=job.state)
