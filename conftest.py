"""Root conftest: marks the repository's root for pytest (``rootdir``, ``testpaths``).

The harness's pytest plugin comes with the package, through its ``pytest11`` entry point
(``./dev`` installs it into ``.venv``), so nothing is loaded from here: the catalog collected
from outside the repository meets no ``pytest_plugins`` of a non-root conftest.
"""
