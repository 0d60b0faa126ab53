"""The simulated device: memory and task execution."""
