"""The benches' own arithmetic and honesty (`bench/`), without a workload."""
