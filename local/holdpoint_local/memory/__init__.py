"""In-memory adapters: `ports.SessionStore` (the sessions, the interrupts, the directory) and the
engine's other ports kept in one process, for the unit tests (and any embedding that needs no
AWS). The store keeps every promise of the DynamoDB store (`holdpoint.aws.store`);
`tests/unit/test_store_contract.py` runs both."""
