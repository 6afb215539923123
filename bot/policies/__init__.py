"""Policies (docs/policies.md): the policy file (`HITL_POLICY_FILE`), read and validated, and which
of its rules a call asks under: who may approve, how many must, for how long, where it is shown;
and who may drive the agent where.
"""

from bot.policies.destinations import Destination, parse_destination
from bot.policies.policy_file import (
    Drivers,
    Escalation,
    Match,
    OnTimeout,
    PolicyFile,
    Rule,
    load_policy_file,
)
from bot.policies.principals import Principal, parse_principal
from bot.policies.rules import Policy, default_rule

__all__ = [
    "Destination",
    "Drivers",
    "Escalation",
    "Match",
    "OnTimeout",
    "Policy",
    "PolicyFile",
    "Principal",
    "Rule",
    "default_rule",
    "load_policy_file",
    "parse_destination",
    "parse_principal",
]
