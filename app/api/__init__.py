"""HTTP routes that belong to no single domain context."""
