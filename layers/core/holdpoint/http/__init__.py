"""The one HTTP edge the Lambda handlers share: the caller from the authorizer's context, body and
id limits, strict JSON, and domain refusals mapped to status codes and the error body."""
