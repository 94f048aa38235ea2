"""kafka-replay: replay real Kafka incidents against your application and prove what happened."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kafka-replay")
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "unknown"
