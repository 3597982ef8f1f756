"""Files: BVH, three-point streams, motion-capture collections, atomic writing, npz reading."""
