"""Neural3Points: the pose predictor and its solver, in numpy."""
