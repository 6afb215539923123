"""What survives a worker's death, kept in the database: the deadline sweep, escalations, the run
leases, the inbox of acked interactions, and reading back a request another worker is writing."""
