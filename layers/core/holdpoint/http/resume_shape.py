"""Made from `holdpoint.http.bodies.ResumeBody` by `make resume-shape`; do not edit. The resume
function checks a resume body against it (holdpoint.http.resuming) and so loads no pydantic."""

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
