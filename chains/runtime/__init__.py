"""The crawl runtime: the chain model and its engine, jobs and their ledger, and the
per-unit pipeline (``pipeline/``: prepare -> fetch -> parse -> save -> spawn -> close).

It knows nothing of Celery: messages go out through a ``dispatch.Dispatch`` it is
given, and a message comes in through ``message.run_message``, called by the task
adapter (``base_task.py``). ARCHITECTURE.md draws the layers and follows one unit
through these files.
"""
