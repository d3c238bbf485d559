"""Red-team pipelines: the reference with one realistic ADR-0021 mistake each (see RESULTS.md)."""
