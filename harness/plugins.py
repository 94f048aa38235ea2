"""A team's own additions, found through the ``kafka_replay.plugins`` entry point group.

Each entry point names a module; importing it registers what it adds (a backend with
``@register_backend``, a run setting with ``add_run_option``, a step or a symptom). They are
imported once, before the backends or the run settings are first listed, by every face of the
harness (the CLI, the pytest plugin, a lane, a compare side), so all of them see the same.
"""

from __future__ import annotations

from importlib.metadata import entry_points

ENTRY_POINT_GROUP = "kafka_replay.plugins"
_loaded = False


class PluginError(ImportError):
    """A plugin module that could not be imported: names the entry point and its value."""


def load_plugins() -> None:
    """Import every plugin module, once per process."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            entry.load()
        except Exception as exc:
            raise PluginError(
                f"the plugin {entry.name} ({entry.value}, entry point group "
                f"{ENTRY_POINT_GROUP}) could not be imported: {type(exc).__name__}: {exc}"
            ) from exc
