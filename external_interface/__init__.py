"""Resources every task needs, one capability per module: a Protocol, backends, a factory."""
