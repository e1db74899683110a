"""Authorization (ACLs) and client quotas: what a principal may do, and how fast."""
