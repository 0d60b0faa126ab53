"""om-run --generate: decoding with KV caches."""
