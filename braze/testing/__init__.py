"""The differential fuzzer: random programs over the public ops, run eagerly and by every
compiled backend, compared; failures shrunk to a minimal program (used by tests and by
``braze fuzz``)."""
