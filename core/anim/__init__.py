"""Skeletons and motion: forward kinematics, character space, inertialization."""
