"""Made from `holdpoint.http.bodies.ResumeBody` and `BulkResumeBody` by `make resume-shape`; do not
edit. The resume function checks a resume body against it (holdpoint.http.resuming) and so loads
no pydantic."""

FIELDS: dict[str, dict[str, int | str]] = {
    "payload": {},
    "expect_fingerprint": {
        "type": "string"
    },
    "comment": {
        "maxLength": 2000,
        "type": "string"
    },
    "arguments": {
        "type": "object"
    }
}

BULK_FIELDS: dict[str, dict[str, int | str]] = {
    "items": {
        "maxItems": 100,
        "minItems": 1,
        "type": "array"
    }
}

ITEM_FIELDS: dict[str, dict[str, int | str]] = {**FIELDS, **{
    "session_id": {
        "pattern": "^[A-Za-z0-9][A-Za-z0-9._:\\-]{0,63}$",
        "type": "string"
    },
    "interrupt_id": {
        "pattern": "^[A-Za-z0-9][A-Za-z0-9._:\\-]{0,63}$",
        "type": "string"
    }
}}

ITEM_REQUIRED: tuple[str, ...] = ('session_id', 'interrupt_id')
