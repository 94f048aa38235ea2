"""The file formats an app's output may be checked in (``FileOutput``), importable without Spark."""

OUTPUT_FORMATS = ("json", "parquet")
