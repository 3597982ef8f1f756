"""`python -m core train ...`: the networks trained in torch and exported for numpy; the arm IK's fit."""
