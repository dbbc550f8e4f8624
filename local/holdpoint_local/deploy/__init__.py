"""What targets real AWS rather than the local stack: `make deploy` (deploy) and `make smoke`
(smoke, the seed scenario against any deployment)."""
