"""The task table: one handler per task type, its checks, decoding and execution."""
