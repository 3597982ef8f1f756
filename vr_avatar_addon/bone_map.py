"""The target armature's bone mapping in the settings: filled from the automatic mapping, read, reported."""
from . import avatar


def bone_map(settings) -> dict[str, str]:
    return {item.joint: item.bone for item in settings.bone_map}


def mapped_armature(settings) -> str:
    """The name of the armature the mapping list is for, now (renamed or not)."""
    obj = settings.bone_map_object
    return obj.name if obj is not None else settings.bone_map_armature


def is_mapped(settings, obj) -> bool:
    """Whether the mapping list is `obj`'s: made for that object, whatever it is called now (a list made by an
    earlier version knows its armature by name only)."""
    if not settings.bone_map:
        return False
    mapped = settings.bone_map_object
    return mapped == obj if mapped is not None else settings.bone_map_armature == obj.name


def mapping_for(settings, obj) -> dict[str, str]:
    """`obj`'s bone mapping: the list as it stands where it is that armature's (hand edits kept), else made anew."""
    if not is_mapped(settings, obj):
        fill_bone_map(settings, obj)
    return bone_map(settings)


def saved_bone_map(settings) -> tuple:
    """The mapping list as it stands (the armature it is for, notes, rows, the armature object), for
    `restore_bone_map`."""
    return (mapped_armature(settings), settings.bone_map_notes, settings.bone_map_index,
            [(item.joint, item.bone, item.guessed) for item in settings.bone_map], settings.bone_map_object)


def restore_bone_map(settings, saved: tuple) -> None:
    """The mapping list put back as `saved_bone_map` saw it."""
    settings.bone_map_armature, settings.bone_map_notes, index, rows, settings.bone_map_object = saved
    settings.bone_map.clear()
    for joint, bone, guessed in rows:
        item = settings.bone_map.add()
        item.joint, item.bone, item.guessed = joint, bone, guessed
    settings.bone_map_index = index


def fill_bone_map(settings, obj, override: dict[str, str] | None = None) -> int:
    """Replace the mapping list with the automatic mapping of `obj` (`override` entries kept); returns how many
    required joints are unmapped."""
    found, guessed, notes = avatar.automatic_mapping(obj, override)
    settings.bone_map.clear()
    settings.bone_map_armature, settings.bone_map_object = obj.name, obj
    settings.bone_map_notes = notes
    for joint, bone in found.items():
        item = settings.bone_map.add()
        item.joint, item.bone = joint, bone
        item.guessed = joint in guessed
    return sum(1 for joint, bone in found.items() if not bone and joint in avatar.REQUIRED_JOINTS)


def report_mapping(operator, settings, obj, missing: int) -> None:
    """The operator's report on a freshly filled mapping: unmapped required joints, guesses, notes."""
    guessed = sum(1 for item in settings.bone_map if item.guessed)
    mapped = sum(1 for item in settings.bone_map if item.bone)
    extra = (f"; {guessed} placed by structure (marked guessed)" if guessed else "") + \
        (f"; {settings.bone_map_notes}" if settings.bone_map_notes else "")
    if missing:
        operator.report({'WARNING'}, f"{missing} required humanoid joint(s) found no bone in '{obj.name}': "
                                     f"pick them in the list{extra}")
    else:
        operator.report({'INFO'}, f"{mapped} of {len(avatar.CANONICAL_JOINTS)} humanoid joints mapped on "
                                  f"'{obj.name}'{extra}")
