"""Frontends: framework model -> IR Graph, through per-op adapters (CANN's framework adapter plugins)."""
