"""The benchmark: generate instances, run them raw and guarded, score, report, compare."""
