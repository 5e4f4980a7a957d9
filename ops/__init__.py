"""Host-level tools that control.sh runs (``python -m ops.NAME``): the embedded Redis,
the cluster's env file, JSON log lines, the host fan-out. Nothing here is imported by the
runtime; they sit beside the entry points."""
