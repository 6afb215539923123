"""`hitl-bridge doctor`: a deployment checked as it is configured, one line per check.

Each module checks one thing and returns `Result`s (results.py); report.py draws them (pure);
running.py runs them side by side, each bounded in time, a failure one line. The checks of a
platform live in its own package (adapters/surfaces/slack/doctor.py,
adapters/surfaces/teams/doctor.py);
adapters/cli/doctor_command.py composes them all into the command.
"""
