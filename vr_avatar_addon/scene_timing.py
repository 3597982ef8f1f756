"""The scene's timing: its frame rate as a number, and fitting its rate and range to a motion."""


def scene_fps(scene) -> float:
    """Frames per second the scene plays at (fps / fps_base)."""
    return scene.render.fps / scene.render.fps_base


def fit_scene_timing(scene, fps: float, frames: int) -> None:
    """Play the scene at `fps` and make its range hold `frames` frames from its start (never shorter)."""
    scene.render.fps = max(1, round(fps))
    scene.render.fps_base = scene.render.fps / fps
    scene.frame_end = max(scene.frame_end, scene.frame_start + frames - 1)
