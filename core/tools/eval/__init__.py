"""`python -m core eval ...`: evaluations against motion-capture ground truth."""
