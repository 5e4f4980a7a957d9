"""A Celery worker whose pool children measure their CPU per phase, for
``bench.chain --profile``.

    python -m bench.profiled_worker OUTDIR -A worker worker -Q forum ...

The arguments after OUTDIR are ``celery``'s. The runtime's phase functions are wrapped
before the worker starts (``bench.phase_meter.install``: the same app, the same
tasks, the runtime's code unchanged); each prefork pool child, once forked, writes its
CPU and its phases' to ``OUTDIR/phases-<pid>.json`` every second. The main process
(the consumer: taking messages off the broker, handing them to the pool, acking) is
measured from outside.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from celery import signals
from celery.__main__ import main as celery_main

from bench import phase_meter


def main(argv: list[str]) -> None:
    if not argv or argv[0].startswith("-"):
        sys.exit("usage: python -m bench.profiled_worker OUTDIR CELERY_ARGS...")
    outdir = Path(argv[0])
    outdir.mkdir(parents=True, exist_ok=True)

    def child(**_: Any) -> None:
        phase_meter.start(outdir)

    phase_meter.install()
    signals.worker_process_init.connect(child, weak=False)
    sys.argv = ["celery", *argv[1:]]
    celery_main()


if __name__ == "__main__":
    main(sys.argv[1:])
