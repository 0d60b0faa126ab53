"""om-run serve: many LLM requests at once on the simulated NPU, scheduled as vllm-ascend and MindIE schedule
them, each engine step timed from the compiled decoder's kernels."""
