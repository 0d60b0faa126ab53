"""What every part uses: atomic writes, quiet IEEE exceptions."""
