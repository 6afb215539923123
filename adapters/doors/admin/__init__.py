"""The admin console under /admin: its pages, sign-in, charts and exports."""
