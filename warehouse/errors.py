"""The library's exceptions. The CLI turns each into one ``Error: ...`` line and a non-zero exit."""
from __future__ import annotations


class WarehouseError(Exception):
    """Base of every error the warehouse reports to a user (never a traceback). ``param``, when given, is the
    API parameter at fault: the message then starts with it (``section 'x': no such section``), and the CLI
    says its flag instead (:meth:`for_cli`: ``--section 'x': ...``)."""

    exit_code = 1
    param: str | None = None

    def __init__(self, message: str = "", *, param: str | None = None):
        self.param, self.detail = param, message
        super().__init__(f"{param} {message}" if param else message)

    def __reduce__(self) -> tuple:
        # (raised in an ingest worker process, re-raised by the one that writes: it must pickle with its param)
        return (_rebuild, (type(self), self.detail, self.param))

    def for_cli(self, flags: dict[str, str] | None = None) -> str:
        """The message with the CLI's flag for ``param`` (``flags`` maps the ones not spelled ``--<param>``)."""
        if not self.param:
            return str(self)
        flag = (flags or {}).get(self.param) or "--" + self.param.replace("_", "-")
        return f"{flag} {self.detail}"


class InputError(WarehouseError):
    """A CSV that cannot be ingested. Names the file, and the row and column when known."""

    def __init__(self, path: str, message: str, row: int | None = None, column: str | None = None):
        self.path, self.row, self.column, self.reason = str(path), row, column, message
        where = self.path
        if row is not None:
            where += f": row {row}"
        if column is not None:
            where += f": column {column!r}"
        super().__init__(f"{where}: {message}")

    def __reduce__(self) -> tuple:
        # (raised in the process that reads the file, re-raised by the one that writes: it must pickle)
        return (InputError, (self.path, self.reason, self.row, self.column))


class SchemaOutdated(WarehouseError):
    """The database is behind the code's head revision."""


class NotFound(WarehouseError):
    """A run, label, section or key that does not exist, or a filter that selects nothing (exit 2, as a usage
    error: a CI gate with a typo must fail, never pass)."""

    exit_code = 2


class UsageError(WarehouseError):
    """Arguments that make no sense together, or a refused operation."""

    exit_code = 2


def _rebuild(cls: type, message: str, param: str | None) -> WarehouseError:
    return cls(message, param=param)
