"""distscan.dist."""
