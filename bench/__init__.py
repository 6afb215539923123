"""Benchmarks that print figures (run each as a script; see its docstring)."""
