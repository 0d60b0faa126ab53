"""Graph passes: folding, switches, device formats, fp16, AIPP fusion, memory, streams, tiling sink."""
