"""The Celery side of the runtime: the app's broker options, message dispatch, what the
reviver reads of the broker, and this process's session on the cluster.

The runtime (``chains.runtime``) knows nothing of Celery: it sends messages through a
``Dispatch`` it is given, and ``dispatch.CeleryDispatch`` is that dispatch on Celery.
``session.current()`` is a runtime built from this host's settings on that dispatch:
what a worker, the CLI and a shell launch through. ``worker.py`` and ``base_task.py``
put a Celery worker around it.
"""
