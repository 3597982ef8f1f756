"""The canonical humanoid: mapping any skeleton onto it, presets, and retargeting onto a character."""
