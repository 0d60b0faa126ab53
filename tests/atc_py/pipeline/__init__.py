"""The build as a whole: streaming compiles, compile-time shortcuts, malformed models."""
