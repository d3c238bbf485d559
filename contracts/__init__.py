"""toolproof.contracts."""
