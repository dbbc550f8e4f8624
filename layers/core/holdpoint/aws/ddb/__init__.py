"""The DynamoDB store in parts (`holdpoint.aws.store` puts them together)."""
