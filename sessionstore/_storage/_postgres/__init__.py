"""What only the PostgreSQL backend needs: URL and pooler handling, and Citus."""
