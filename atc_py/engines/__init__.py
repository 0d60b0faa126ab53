"""Task generation per engine (AI Core, AICPU)."""
