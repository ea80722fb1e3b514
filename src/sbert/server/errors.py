"""The JSON error every bad request gets: OpenAI's shape on sbert's routes, text-embeddings-inference's
on TEI's (:meth:`APIError.answer`), with TEI's status for each of its error types."""

from __future__ import annotations

import json
from typing import Literal

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    503: "unavailable_error",
}


# text-embeddings-inference's ErrorType (router/src/lib.rs), written as serde writes it, and the
# status TEI gives each (``impl From<&ErrorType> for StatusCode`` in router/src/http/server.rs, read at
# commit bc0fa321bfeb17126a9f0336835ec2b98d1946d1): Validation is 413, Tokenizer 422, Empty 400.
TEIErrorType = Literal["Unhealthy", "Backend", "Overloaded", "Validation", "Tokenizer", "Empty"]
TEI_STATUS: dict[TEIErrorType, int] = {
    "Unhealthy": 503,
    "Backend": 424,
    "Overloaded": 429,
    "Tokenizer": 422,
    "Validation": 413,
    "Empty": 400,
}
TEI_ERROR_TYPES: dict[int, TEIErrorType] = {429: "Overloaded", 503: "Unhealthy"}
# What TEI validates itself (a list over its limit, an input over the model's, an unknown prompt):
# its ErrorType::Validation, 413.
TEI_VALIDATION: tuple[int, TEIErrorType] = (TEI_STATUS["Validation"], "Validation")


class APIError(Exception):
    """An HTTP error with an OpenAI-style body: ``{"error": {"message", "type", "param", "code"}}``;
    on TEI's routes, TEI's: ``{"error": "<message>", "error_type": "Validation"}``.

    Args:
        status: The status on sbert's routes.
        message: What was wrong, starting with the field and item (``input[3]: ...``).
        param: The field and item, or ``body``.
        code: A machine-readable reason where there is one (``input_too_long``).
        headers: Extra headers (``Retry-After``).
        tei: TEI's status and error type where they are not the default of ``status`` (see
            :meth:`tei_status`): TEI answers an unknown prompt name with 413 ``Validation``, where
            sbert answers 422.
    """

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        tei: tuple[int, TEIErrorType] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.headers = headers or {}
        self.tei = tei

    def tei_status(self) -> tuple[int, TEIErrorType]:
        """TEI's status and ``error_type``: ``tei`` if given, else the status with its TEI type
        (429 Overloaded, 503 Unhealthy, 5xx Backend; any other 4xx is a bad request: Validation).

        Examples:
            >>> APIError(429, "busy").tei_status(), APIError(413, "body: too big").tei_status()
            ((429, 'Overloaded'), (413, 'Validation'))
            >>> APIError(422, "prompt_name: unknown", tei=TEI_VALIDATION).tei_status()
            (413, 'Validation')
        """
        if self.tei is not None:
            return self.tei
        kind = TEI_ERROR_TYPES.get(self.status, "Backend" if self.status >= 500 else "Validation")
        return self.status, kind

    def answer(self, tei: bool = False) -> tuple[int, bytes]:
        """The status and body: sbert's (OpenAI's shape), or with ``tei`` TEI's.

        Examples:
            >>> APIError(422, "inputs[1]: required", "inputs[1]").answer(tei=True)
            (422, b'{"error": "inputs[1]: required", "error_type": "Validation"}')
        """
        if not tei:
            return self.status, self.body()
        status, kind = self.tei_status()
        return status, json.dumps({"error": self.message, "error_type": kind}).encode()

    def body(self) -> bytes:
        error = {
            "message": self.message,
            "type": ERROR_TYPES.get(
                self.status, "invalid_request_error" if self.status < 500 else "server_error"
            ),
            "param": self.param,
            "code": self.code,
        }
        return json.dumps({"error": error}).encode()
