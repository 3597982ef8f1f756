"""Numbers and geometry: quaternions, vectors, springs, heading frames, least-squares paths."""
