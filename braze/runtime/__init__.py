"""Runtime services below the tensor API: devices (and, with the lazy backend, caches and metrics)."""
