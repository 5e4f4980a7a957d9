"""The job every fault scenario hurts: the demo chain, fetching every unit every time."""

from __future__ import annotations

import time

from bench.fault_measure import Trial
from chains.demo import demo as declared_demo
from chains.runtime.model import Chain


def without_recrawl(chain: Chain) -> Chain:
    """The chain fetching every unit every time: each run is a full crawl."""
    steps = {name: s.model_copy(update={"recrawl": None}) for name, s in chain.steps.items()}
    return chain.model_copy(update={"steps": steps})


CHAIN = without_recrawl(declared_demo)


def start_and_launch(trial: Trial, workers: int) -> None:
    trial.cluster.start(workers, trial.concurrency)
    launch_now(trial, CHAIN)


def launch_now(trial: Trial, chain: Chain) -> None:
    """Launch ``chain`` on the started cluster; the job is the one the trial measures."""
    trial.launched_at = time.time()
    trial.job_id = trial.cluster.launch(chain, page=1).job_id
