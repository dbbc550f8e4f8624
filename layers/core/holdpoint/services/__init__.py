"""Use cases: each combines the core's rules with the ports (storage, queue, parking, timers,
workers, LLMs), and never names an adapter. Submitting inputs and reading views (`sessions`),
resuming (`resume`), settling calls (`settle`), running the engine (`runner`), authenticating
(`auth`), and the one commit-with-contention loop every writer uses (`contention`)."""
