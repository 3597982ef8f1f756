"""Motion matching (MMVR §5-6): the pose and feature databases, the search, the solver."""
