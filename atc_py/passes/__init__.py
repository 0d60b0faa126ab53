"""Graph passes, one concern per module."""
