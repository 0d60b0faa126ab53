"""The repository itself: import layering, docs, the fuzz campaign, bench entry points."""
