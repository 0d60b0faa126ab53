"""om-run: loads an .om into a simulated Ascend device and runs it."""
