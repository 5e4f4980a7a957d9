"""Demo steps of this platform."""
