"""The API's refusal: an HTTP status and an error body that names the field."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A refusal with its HTTP status and error body (`{"error": {code, message, param?}}`)."""

    def __init__(self, status: int, code: str, message: str, param: str | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.param = param
        self.extra = extra

    def body(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.param:
            err["param"] = self.param
        err.update(self.extra)
        return {"error": err}
