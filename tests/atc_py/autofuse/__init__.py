"""Automatic fusion: AscGraph, auto tiling, fused kernels, hostile AscGraphs."""
