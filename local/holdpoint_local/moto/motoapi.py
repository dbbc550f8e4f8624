"""Fix 34 to moto 5.2.5's own API (`/moto-api/`), which the tests read moto's state through.

34. **`GET /moto-api/data.json` answers once a Lambda function exists.** It lists every model
    moto holds with the attributes that are JSON, skipping those that are not; but reading a
    Lambda function's `docker_client` connects to Docker and raises when there is none, so on the
    local stack (no Docker) the whole answer was a 500, and what SES sent (`ses.Message`: source,
    destinations, subject, body) could not be read over the server. An attribute that cannot be
    read is now skipped as one that is not JSON is. And `?service=NAME` (repeatable) answers only
    those services' models: the whole dump walks every attribute of every model the server holds,
    which on a test run's shared server (every stack it made) took over 30 seconds. Stock moto
    ignores the parameter and answers everything, so a reader of one service works on both.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit


def _readable(instance: Any) -> dict[str, Any]:
    """The public attributes of a model instance that can be read and are JSON."""
    out: dict[str, Any] = {}
    for attr in dir(instance):
        if attr.startswith("_"):
            continue
        try:
            value = getattr(instance, attr)
            json.dumps(value)
        except Exception:  # noqa: BLE001, S112 - moto's own skip, widened to any failure to read
            continue
        out[attr] = value
    return out


def _model_data(self: Any, request: Any, full_url: str, headers: Any) -> tuple[int, dict[str, str], str]:
    from moto.core.model_instances import model_data

    wanted = set(parse_qs(urlsplit(full_url).query).get("service", [])) or set(model_data)
    results = {service: {name: [_readable(i) for i in model.instances_tracked]  # type: ignore[attr-defined]
                         for name, model in sorted(model_data[service].items())}
               for service in sorted(wanted & set(model_data))}
    return 200, {"Content-Type": "application/javascript"}, json.dumps(results)


def apply() -> None:
    from moto.moto_api._internal import urls
    from moto.moto_api._internal.responses import MotoAPIResponse

    MotoAPIResponse.model_data = _model_data  # type: ignore[method-assign]
    urls.url_paths["{0}/moto-api/data.json"] = urls.response_instance.model_data
