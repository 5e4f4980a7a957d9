"""Seeing jobs: summaries, live progress, metrics."""
