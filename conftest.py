"""Root conftest: loads the harness's pytest plugin when the package is not installed.

When it is installed, the ``pytest11`` entry point has already registered the plugin under
the same name and this line is a no-op.
"""

pytest_plugins = ["kafka_replay.pytest_plugin"]
