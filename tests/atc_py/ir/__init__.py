"""The graph: node names and their namespace."""
