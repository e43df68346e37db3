"""The single exception type of :mod:`braze.data`.

Every problem with input data (missing files, bad checksums, malformed IDX headers,
unreadable images, inconsistent arguments) raises :class:`DataError`, so callers can
handle "the data is wrong" separately from bugs in their own code.
"""


class DataError(ValueError):
    """Raised when data cannot be found, read or validated.

    It subclasses :class:`ValueError` because, from the caller's point of view, the
    problem is a bad value (a file, a directory or an argument) rather than a bug.
    """
