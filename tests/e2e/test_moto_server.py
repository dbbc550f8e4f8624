"""The moto server child process ("AWS" for the local stack) runs with the fixes of
holdpoint_local.moto applied, and the fixes refuse a moto they were not written for."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import moto
import pytest
from botocore.exceptions import ClientError

from holdpoint_local import FAKE_ENV
from holdpoint_local import moto as moto_fixes
from holdpoint_local.moto.server import MotoServer


def test_the_server_child_applies_the_fixes_and_conditional_writes_are_atomic(tmp_path: Path) -> None:
    log = tmp_path / "moto.log"
    with MotoServer(log_path=log) as server:
        assert f"{moto_fixes.MARKER} (moto {moto_fixes.PINNED})" in log.read_text()
        ddb = boto3.client("dynamodb", endpoint_url=server.endpoint, region_name=FAKE_ENV["AWS_REGION"],
                           aws_access_key_id="testing", aws_secret_access_key="testing")
        ddb.create_table(TableName="t", BillingMode="PAY_PER_REQUEST",
                         AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
                         KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}])

        def create(i: int) -> bool:
            try:
                ddb.put_item(TableName="t", Item={"PK": {"S": "k"}, "by": {"N": str(i)}},
                             ConditionExpression="attribute_not_exists(PK)")
            except ClientError as exc:
                assert exc.response["Error"]["Code"] == "ConditionalCheckFailedException"
                return False
            return True

        with ThreadPoolExecutor(max_workers=16) as pool:
            assert list(pool.map(create, range(32))).count(True) == 1


def test_fixes_refuse_an_unknown_moto_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(moto, "__version__", "9.9.9")
    with pytest.raises(moto_fixes.UnknownMotoVersion, match=f"moto {moto_fixes.PINNED}.*moto 9.9.9"):
        moto_fixes.apply()


def test_each_lambda_setting_of_the_fixes_keeps_the_others(tmp_path: Path) -> None:
    """Fixes 29-30 are set apart (the durable emulator, the Lambda endpoint): setting or clearing
    one keeps the other and moto's own Lambda settings."""
    from holdpoint_local.moto import awslambda
    from holdpoint_local.moto.server import _http, set_durable_endpoint, set_invoke_endpoint

    with MotoServer(log_path=tmp_path / "moto.log") as server:
        def lambda_config() -> dict[str, object]:
            import json

            return dict(json.loads(_http("GET", f"{server.endpoint}/moto-api/config")[1])["lambda"])

        own = lambda_config()
        set_durable_endpoint(server.endpoint, "http://127.0.0.1:1")
        set_invoke_endpoint(server.endpoint, "http://127.0.0.1:2")
        assert lambda_config() == {**own, awslambda.ENDPOINT_KEY: "http://127.0.0.1:1",
                                   awslambda.INVOKE_KEY: "http://127.0.0.1:2"}
        set_durable_endpoint(server.endpoint, None)
        assert lambda_config() == {**own, awslambda.INVOKE_KEY: "http://127.0.0.1:2"}
