"""The audit log: who decided what, sealed into a hash chain (chain, hashing), read back (query,
export), with secrets kept out (redaction) and refused answers recorded (refusals)."""
