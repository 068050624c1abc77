"""The Agent Skills shipped in the package (clineval/skills/NAME/SKILL.md, and each
benchmark's `skills_dir`/NAME/SKILL.md): list and install.

A skill is a folder whose SKILL.md starts with YAML front matter holding `name` (equal to the
folder's name) and `description`. `install` copies whole folders into a target directory (an
agent's skills folder). A folder already there that is identical is left alone; a different one
is refused unless `force`, and every refusal happens before anything is copied.
"""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from clineval.errors import InputError
from clineval.rundir import CannotWrite, make_dir

SKILL_FILE = "SKILL.md"
NAME_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_NAME = 64
MAX_DESCRIPTION = 1024


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: Path  # the folder in the installed package


@dataclass(frozen=True)
class Installed:
    name: str
    path: Path
    status: str  # "installed" | "unchanged" | "replaced"


def skills_root() -> Path:
    # The package is installed as files (a wheel or an editable install), never zipped.
    return Path(str(resources.files("clineval") / "skills"))


def front_matter(text: str, path: Path) -> dict[str, str]:
    """The `key: value` lines between the opening and closing `---` of a SKILL.md.

    Only what the shipped skills use: one-line values, plain or in double quotes
    (tests/test_skills.py checks that a YAML parser reads the same)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise InputError("no front matter (the file must start with ---)", path=path, line=1)
    fields: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        if line.strip() == "---":
            return fields
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            raise InputError("front matter line is not 'key: value'", path=path, line=number)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        fields[key.strip()] = value
    raise InputError("front matter is not closed by ---", path=path)


def check_skill(folder: Path) -> Skill:
    """The skill in `folder`, its front matter checked against the Agent Skills rules."""
    path = folder / SKILL_FILE
    fields = front_matter(path.read_text(encoding="utf-8"), path)
    name, description = fields.get("name", ""), fields.get("description", "")
    if name != folder.name:
        raise InputError(f"name {name!r} differs from the folder name {folder.name!r}", path=path)
    if len(name) > MAX_NAME or not NAME_PATTERN.fullmatch(name):
        raise InputError(
            f"name {name!r}: lowercase letters, digits and single hyphens, at most {MAX_NAME}",
            path=path,
        )
    if not description or len(description) > MAX_DESCRIPTION:
        raise InputError(f"description must hold 1 to {MAX_DESCRIPTION} characters", path=path)
    return Skill(name=name, description=description, path=folder)


def skill_folders() -> list[Path]:
    """Every shipped skill's folder: clineval's own, then each installed benchmark's."""
    from clineval.benchmarks.registry import benchmarks_with_skills

    roots = [skills_root(), *benchmarks_with_skills()]
    return [d for root in roots for d in sorted(root.iterdir()) if (d / SKILL_FILE).is_file()]


def skill_folder(name: str) -> Path:
    """The folder of the shipped skill `name`."""
    for folder in skill_folders():
        if folder.name == name:
            return folder
    raise InputError(f"no skill named {name!r}")


def list_skills() -> list[Skill]:
    """clineval's own skill and every installed benchmark's skill pages."""
    return [check_skill(d) for d in skill_folders()]


def _files(folder: Path) -> list[str]:
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


def same_tree(a: Path, b: Path) -> bool:
    """Both folders hold the same files with the same bytes."""
    if not b.is_dir() or b.is_symlink():
        return False
    names = _files(a)
    if names != _files(b):
        return False
    return all(filecmp.cmp(a / n, b / n, shallow=False) for n in names)


def _copy(source: Path, dest: Path) -> None:
    """Copy `source` to `dest` through a temporary folder beside it, so an interrupted copy
    never leaves half a skill under the skill's name; a replaced folder goes last."""
    make_dir(dest.parent)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    except OSError as exc:
        raise CannotWrite(dest, exc.strerror or str(exc)) from None
    try:
        shutil.copytree(source, staging / "new", ignore=shutil.ignore_patterns("__pycache__"))
        old = None
        if dest.is_symlink() or dest.exists():
            old = staging / "old"
            os.replace(dest, old)
        os.replace(staging / "new", dest)
    except shutil.Error as exc:  # copytree's errors, one per file: the first says enough
        first = exc.args[0][0] if exc.args and exc.args[0] else (str(dest), "", str(exc))
        raise CannotWrite(dest, str(first[2])) from None
    except OSError as exc:  # named by its target: the staging names mean nothing to a user
        raise CannotWrite(dest, exc.strerror or str(exc)) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def install(names: Iterable[str], target: Path, *, force: bool = False) -> list[Installed]:
    """Copy the named skills (all when `names` is empty) into `target`/NAME."""
    available = {skill.name: skill for skill in list_skills()}
    wanted = list(dict.fromkeys(names)) or list(available)
    unknown = [n for n in wanted if n not in available]
    if unknown:
        raise InputError(f"unknown skill {unknown[0]!r} (known: {', '.join(available)})")
    if os.path.isfile(target):  # said with the flag; other unwritable targets: make_dir
        raise InputError("--output-dir is a file, not a directory", path=target)
    make_dir(target)
    plan: list[tuple[Skill, Path, str]] = []
    for name in wanted:
        skill, dest = available[name], target / name
        if not (dest.exists() or dest.is_symlink()):
            plan.append((skill, dest, "installed"))
        elif same_tree(skill.path, dest):
            plan.append((skill, dest, "unchanged"))
        elif force:
            plan.append((skill, dest, "replaced"))
        else:
            raise InputError(
                f"holds a different {name!r} skill: not overwritten (pass --force to replace it)",
                path=dest,
            )
    for skill, dest, status in plan:
        if status != "unchanged":
            _copy(skill.path, dest)
    return [Installed(skill.name, dest, status) for skill, dest, status in plan]
