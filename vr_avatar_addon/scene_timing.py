"""The scene's timing: its frame rate as a number, and fitting its rate and range to a motion."""


def scene_fps(scene) -> float:
    """Frames per second the scene plays at (fps / fps_base)."""
    return scene.render.fps / scene.render.fps_base


def fit_scene_timing(scene, fps: float, frames: int, keep_rate: bool = False) -> None:
    """Play the scene at `fps` (unless `keep_rate`) and make its range hold `frames` frames from its start (never
    shorter)."""
    if not keep_rate:
        scene.render.fps = max(1, round(fps))
        scene.render.fps_base = scene.render.fps / fps
    scene.frame_end = max(scene.frame_end, scene.frame_start + frames - 1)


def has_timed_content(scene) -> bool:
    """Whether the scene holds what its frame rate times: a cached solve or an animated object (a loaded stream's
    empties, a baked avatar)."""
    return "vr_avatar_solve" in scene or any(obj.animation_data is not None and obj.animation_data.action is not None
                                             for obj in scene.objects)


def kept_rate_note(scene, fps: float) -> str:
    """'' where the scene plays at `fps`, else a clause saying that it keeps its own rate."""
    if abs(scene_fps(scene) - fps) < 1e-3:
        return ""
    return (f"; the scene keeps its {scene_fps(scene):g} fps (it holds a solve or animation), so this {fps:g} fps "
            "motion is keyed resampled to it")
