"""The installed package's version, read once (``importlib.metadata`` scans the installed
distributions: about 3 ms a call, too slow for every Hello)."""

from importlib import metadata


def _installed() -> str:
    try:
        return metadata.version("kozel-arena")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source tree, not installed
        return "0+unknown"


VERSION = _installed()
