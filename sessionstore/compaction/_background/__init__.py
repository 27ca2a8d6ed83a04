"""Background compaction: a summary prepared off the request path under a lease,
committed at the trigger."""
