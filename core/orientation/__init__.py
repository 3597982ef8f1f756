"""Body orientation from the devices: the shipped window model and MMVR §4's network."""
