"""Development tools (not shipped): rule pages generation."""
