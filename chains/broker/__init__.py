"""The Celery side of the runtime: the app's broker options, message dispatch, and what
the reviver reads of the broker.

The runtime (``chains.runtime``) sends messages through a ``Dispatch`` it is given;
``dispatch.CeleryDispatch`` is that dispatch on Celery. This package knows Celery and
kombu and nothing of chains or jobs; ``worker.py`` and ``base_task.py`` are the two
files above the runtime that put a Celery worker around it.
"""
