"""HCCL on the simulated machine: rank tables, what a collective costs over a topology's links (HCCL's algorithms in
the alpha-beta model), link calibration from a real hccl_test output, and `om-run hccl-test`."""
