"""Profile selection for the command line: a built-in name, or a TOML file that starts from one."""
import tomllib
from pathlib import Path

from controller.profiles import BUILTIN, ProfileError, get_profile, profile_from_mapping


def load_profile(spec):
    """`spec` is a built-in profile name or the path of a profile TOML file."""
    if spec in BUILTIN:
        return get_profile(spec)
    path = Path(spec)
    if not path.suffix == ".toml":
        raise ProfileError(f"unknown profile {spec!r}; built in: {', '.join(BUILTIN)}, or a .toml file")
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise ProfileError(f"{path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ProfileError(f"{path}: not UTF-8 text") from None
    except ValueError as e:           # TOMLDecodeError, or an integer past 4300 digits
        raise ProfileError(f"{path}: not valid TOML: {e}") from None
    return profile_from_mapping(data, where=str(path))
