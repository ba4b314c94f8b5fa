"""Building blocks of the simulated world: deterministic wheels, PEP 503 indexes, a loopback server."""
