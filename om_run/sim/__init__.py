"""The cycle-counted simulator: runtime profile, cores, task scheduler, host runtime, reports."""
