"""Tests of the simulator, one folder per package of om_run."""
