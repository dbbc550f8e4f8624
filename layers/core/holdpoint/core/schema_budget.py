"""What one schema evaluation (or one declaration's probes) may spend, shared by `core.schemas` and
the keywords it loads with the first evaluation (`core.schema_keywords`), so neither imports the other
back."""

MAX_STEPS = 100_000  # keyword evaluations (weighted by size) one evaluation, or one declaration, may do
BYTES_PER_STEP = 64  # a string (regexed, or an error message built) costs a step per this many bytes
UNSUPPORTED = frozenset({"unevaluatedProperties", "unevaluatedItems"})  # jsonschema's are quadratic
