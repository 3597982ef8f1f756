"""Inverse kinematics: Parger et al.'s upper-body IK, FABRIK, two-bone legs, foot lock."""
