"""Small neural-network building blocks in numpy."""
