"""The three tracked devices: where they sit on the body, simulation, calibration, live OpenXR input."""
