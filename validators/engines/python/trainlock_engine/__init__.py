"""trainlock's Python engines (placeholder docstring, completed below)."""
