"""What the cluster is made of and doing: chains and steps, workers and queues, sites.

    GET /api/chains            every declared chain, with its start params' schema
    GET /api/chains/{name}
    GET /api/steps             every step: site, queue, URL, input schema, items
    GET /api/workers           live workers, and queues with depth and consumers
                               (``unconsumed``: no live worker takes it)
    GET /api/sites             each site's politeness bucket and adaptive throttle
    GET /api/health            the server answers and the state Redis does
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api.jobs import Runtime
from api.models import ChainView
from api.runtime import Chain, Cluster

router = APIRouter(prefix="/api", tags=["cluster"])


@router.get("/health")
def health(rt: Runtime) -> dict[str, Any]:
    """The server is up and reaches the state Redis."""
    return {"ok": rt.healthy()}


@router.get("/chains")
def list_chains(rt: Runtime) -> list[ChainView]:
    """Every chain declared in chains/<site>.py, with its steps and links."""
    return [view(rt, chain) for _, chain in sorted(rt.chains().items())]


@router.get("/chains/{name}")
def one_chain(name: str, rt: Runtime) -> ChainView:
    return view(rt, rt.chain(name))


def view(rt: Cluster, chain: Chain) -> ChainView:
    dumped = chain.model_dump(mode="json")
    return ChainView(name=chain.name, start=chain.start, steps=dumped["steps"],
                     links=dumped["links"], start_input=rt.start_input(chain))


@router.get("/steps")
def list_steps(rt: Runtime) -> list[dict[str, Any]]:
    """Every step of every site, with its input model's JSON schema."""
    return rt.steps()


@router.get("/workers")
def workers_and_queues(rt: Runtime) -> dict[str, Any]:
    """Live workers (pool, tasks done, queues consumed) and every queue: ready messages,
    consumers, and ``unconsumed`` when a launch would use it and no live worker takes it."""
    return rt.workers()


@router.get("/sites")
def sites(rt: Runtime) -> list[dict[str, Any]]:
    """Per site (or host): the politeness bucket (rate, leases, cooldown) and the adaptive
    throttle (rate now, window, learnt ceiling, 429s, 5xx)."""
    return rt.sites()
