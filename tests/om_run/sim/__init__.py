"""The simulated machine: scheduling, threads, host heap, fast paths, dumps, overflow, fidelity."""
