"""A customer's Lambda function that takes a run's answers (a `lambda` run target): the SDK's
`Deliveries` reads each delivery and hands each delivery id over once; this one prints what it
took, for the test to read in the function's log."""

import json

from holdpoint_sdk.runs import Deliveries, RunDelivery


def took(delivery: RunDelivery) -> None:
    print("TOOK " + json.dumps({"run_id": delivery.run_id, "delivery_id": delivery.delivery_id,
                                 "verdicts": [a.verdict for a in delivery.answers]}))


handler = Deliveries(took).lambda_handler()
