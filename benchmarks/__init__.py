"""Scripts that print speed and overhead figures (run each as python benchmarks/NAME.py); hostile_cases holds cases the tests share."""
