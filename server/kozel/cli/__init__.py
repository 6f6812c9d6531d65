"""The ``kozel`` command line."""
