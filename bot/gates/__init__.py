"""Approval gates in front of dangerous tools: the gate (gate), the approval request it asks
(approvals), the approved call run once (runs), and tools allowed unasked for a while (grants)."""
