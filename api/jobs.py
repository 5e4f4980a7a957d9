"""The job endpoints: launch, list, summary, the verbs, throughput, items.

    POST /api/jobs                      launch            -> 201 {job_id, chain, state}
    GET  /api/jobs?limit=N              the newest jobs
    GET  /api/jobs/{id}                 summary: steps, totals, progress, failure groups
    GET  /api/jobs/{id}/throughput      units/s per time bucket over the job's life
    POST /api/jobs/{id}/pause|resume|cancel
    POST /api/jobs/{id}/retry           {step?, error?}
    GET  /api/jobs/{id}/items?format=jsonl|csv[&collection=C][&fields=a,b]
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, status
from fastapi.responses import StreamingResponse

from api.models import Launched, LaunchRequest, RetryRequest, VerbDone
from api.runtime import Cluster
from api.stream import streamed

router = APIRouter(prefix="/api", tags=["jobs"])


def cluster(request: Request) -> Cluster:
    found: Cluster = request.app.state.cluster
    return found


Runtime = Annotated[Cluster, Depends(cluster)]
MEDIA = {"jsonl": "application/x-ndjson", "csv": "text/csv; charset=utf-8"}


@router.post("/jobs", status_code=status.HTTP_201_CREATED)
def launch_job(body: LaunchRequest, rt: Runtime) -> Launched:
    """Launch a chain; the same checks as `crawlchain launch`, then its root is queued."""
    crawl = body.crawl.model_dump() if body.crawl else None
    job = rt.launch(body.chain, body.params, body.settings, body.http_cache, crawl)
    return Launched(job_id=job.job_id, chain=body.chain, state=rt.state(job.job_id))


@router.get("/jobs")
def list_jobs(rt: Runtime, limit: Annotated[int, Query(ge=1, le=1000)] = 20
              ) -> list[dict[str, Any]]:
    """The newest jobs: id, chain, state, unit counts, started, elapsed (`crawlchain jobs`)."""
    return rt.jobs(limit)


@router.get("/jobs/{job_id}")
def job_summary(job_id: str, rt: Runtime,
                failures: Annotated[int, Query(ge=0, le=1000)] = 20) -> dict[str, Any]:
    """One job: state, per-step counts (gone units included), progress, throughput,
    failures grouped by step and error class with example URLs, the newest failures."""
    return rt.summary(job_id, failures)


@router.get("/jobs/{job_id}/throughput")
def job_throughput(job_id: str, rt: Runtime) -> dict[str, Any]:
    """Units finished per second in each time bucket of the job's life."""
    return rt.throughput(job_id)


@router.post("/jobs/{job_id}/pause")
def pause_job(job_id: str, rt: Runtime) -> VerbDone:
    """No unit of the job starts from now on, on any worker; those fetching finish."""
    rt.pause(job_id)
    return VerbDone(job_id=job_id, state=rt.state(job_id), units=0)


@router.post("/jobs/{job_id}/resume")
def resume_job(job_id: str, rt: Runtime) -> VerbDone:
    """Run a paused job on; its parked units are sent again."""
    sent = rt.resume(job_id)
    return VerbDone(job_id=job_id, state=rt.state(job_id), units=sent)


@router.post("/jobs/{job_id}/cancel")
def cancel_job(job_id: str, rt: Runtime) -> VerbDone:
    """End the job: answers once no unit of it can start any more; its open units are
    recorded cancelled."""
    cancelled = rt.cancel(job_id)
    return VerbDone(job_id=job_id, state=rt.state(job_id), units=cancelled)


@router.post("/jobs/{job_id}/retry")
def retry_job(job_id: str, rt: Runtime, body: RetryRequest | None = None) -> VerbDone:
    """Run failed units again in the same job: all, one step's, or one error class's."""
    chosen = body or RetryRequest()
    sent = rt.retry(job_id, chosen.step, chosen.error)
    return VerbDone(job_id=job_id, state=rt.state(job_id), units=sent)


@router.get("/jobs/{job_id}/items", response_class=StreamingResponse,
            responses={200: {"content": {m: {} for m in MEDIA.values()}}})
def job_items(job_id: str, rt: Runtime, format: Literal["jsonl", "csv"] = "jsonl",
              collection: str | None = None, fields: str | None = None) -> StreamingResponse:
    """The job's items, streamed as they are read (memory stays flat): JSON lines, or CSV
    with one column per item field; one collection's only, or only some fields."""
    rt.job(job_id)  # 404 before the status line, for a job the ledger does not know
    chosen = tuple(f.strip() for f in fields.split(",") if f.strip()) if fields else None
    body = streamed(lambda out: rt.items(job_id, format, out, collection, chosen))
    name = f"{job_id}{'-' + collection if collection else ''}.{format}"
    return StreamingResponse(body, media_type=MEDIA[format],
                             headers={"Content-Disposition": f'attachment; filename="{name}"'})
