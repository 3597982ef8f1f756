"""Tools around the Blender add-on that do not ship in its zip: the demo's scene (`demo_scene`), the evaluation on
third-party characters (`eval_rigs`) and the extension's packaging (`packaging`)."""
