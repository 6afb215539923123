"""The tools that ask a person (the five built-in kinds and custom ones): their argument and answer
models, and the handler serving them to the agent loop."""
