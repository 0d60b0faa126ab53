"""What every part of atc-py and om-run uses: ATC's errors, limits, atomic writes, reading user files, the
progress line, quieting IEEE warnings."""
