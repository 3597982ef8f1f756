"""Stitching clips with Kim et al.'s Recurrent Motion Refiner."""
