"""Fidelity of om-run's simulated time: a fixed op sweep and whole models against each kernel's roofline
and against every published figure the project can cite; the calibration of the profile's cube parameters.
Run `make fidelity` (python -m bench.fidelity); tests/om_run/sim/test_fidelity.py checks the physics on the same sweep."""
