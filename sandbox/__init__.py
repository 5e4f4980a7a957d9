"""The local demo site: a small social news site on loopback, deterministic from a seed."""
